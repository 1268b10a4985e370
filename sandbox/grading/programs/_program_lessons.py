"""The lessons a program's feedback teaches, in the contract's words rather than skyl's Python names:
headers and exit statuses a program in any language can act on. The rules are the Python lessons'
own, so a rule reads the same in `pytest challenges/` and `sandbox grade`. Data only.
"""

from __future__ import annotations

from ..judge._lessons import CONCURRENT, STREAM, TOOL_FAILED, Lesson
from ..judge._retries import GIVE_UP, NO_REPEAT, RETRY

__all__ = [
    "GIVE_UP_AND_SAY_WHY",
    "PROVIDER_STOPS",
    "RETRY_AFTER_THE_HINT",
    "RETRY_THE_SAME_REQUEST",
    "RUN_CONCURRENTLY",
    "STREAM_EVERY_REQUEST",
    "TOOL_FAILED_GOES_BACK",
]

RUN_CONCURRENTLY = Lesson(
    CONCURRENT.rule,
    "Start the tool request of every call in the turn before waiting for any of them (goroutines and a "
    "sync.WaitGroup in Go, Promise.all in JavaScript), then append the results in call order.",
)
STREAM_EVERY_REQUEST = Lesson(
    STREAM.rule,
    'With SANDBOX_STREAM=1, ask for a stream on every request ("stream": true in OpenAI and Anthropic '
    "bodies; :streamGenerateContent?alt=sse on Gemini) and rebuild the turn from its events: text "
    "deltas joined, each call's argument fragments joined by index and parsed once the stream ends.",
)
TOOL_FAILED_GOES_BACK = Lesson(
    TOOL_FAILED.rule,
    "A failing tool is information for the model, not a reason to stop: when a tool request answers "
    '{"error": ...}, send its text back as that call\'s result, marked as an error (is_error on '
    "Anthropic; words like 'ERROR: ...' everywhere), and ask the model again.",
)
PROVIDER_STOPS = Lesson(
    "Catch the tool's failure, not the provider's: an error from the model means the request itself was refused.",
    "Treat a tool run's {\"error\": ...} as the tool's failure (send it back as an error result), but an "
    "error status from the model as the end: resending a refused request gets the same refusal, "
    "and printing an earlier turn hides that the model never answered. Exit non-zero with the error on stderr.",
)
RETRY_AFTER_THE_HINT = Lesson(
    RETRY.rule,
    "The provider said to try again later: wait its hint (the retry-after-ms header, or retry-after in "
    'seconds; on Gemini the 429 body\'s google.rpc.RetryInfo "retryDelay": "0.03s"; a short backoff of '
    "your own when there is none), then send the same request again. Retry a 429, 503 or 529 and a "
    "connection that broke before the answer was whole; never any other status (a 400: the request itself "
    "is wrong; a 401, 403 or 404: the key or the model is): exit non-zero with it on stderr.",
)
RETRY_THE_SAME_REQUEST = Lesson(
    NO_REPEAT.rule,
    "Retry around the model request alone: append the turn and run its tools once, after its answer arrived "
    "whole. A stream that broke before its end (no [DONE], no message_stop or response.completed, a "
    "connection closed mid-answer) and a body cut short are discarded, never half appended.",
)
GIVE_UP_AND_SAY_WHY = Lesson(
    GIVE_UP.rule,
    "When the last attempt fails, exit non-zero with a line on stderr that says which status the provider "
    "kept sending, how many attempts you made and what to check: gave up after 3 attempts: the provider "
    "kept answering 529 (overloaded_error); check the provider's status page and your rate limits.",
)
