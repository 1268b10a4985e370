"""The names a program's feedback uses: the learner's own language, when the grader knows it.

The rules and hints are written with skyl's Python names (`resp.message`, `resp.tool_calls()`). A Go
learner reads the lesson's Go names (`resp.Message`, `resp.ToolCalls()`, `skyl.AssistantText`), a
JavaScript learner the names of `examples/js/loop.mjs` (`resp.message`, `resp.toolCalls`). `sandbox
grade --lang` says which; without it, `detect_language` reads the command and the build line, and a
Go binary's own build-info header. `translate` rewrites each piece of a feedback (`Feedback.render` calls it inside
`speaking(language)`): a hint that only makes sense in Python is replaced whole, then the API names are
swapped one for one.

Reads only the program's first file (for the header), never runs anything.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from shutil import which

__all__ = ["LANGUAGES", "current_language", "detect_language", "speaking", "translate"]

LANGUAGES = ("go", "js", "python", "other")

_GO_BUILDINFO = b"\xff Go buildinf:"
"""The magic that opens a Go binary's `.go.buildinfo` section (Go 1.13 on; `debug/buildinfo`)."""
_SCAN_LIMIT = 256 * 1024 * 1024
_JS_RUNTIMES = {"node", "nodejs", "deno", "bun"}
_JS_FILE = re.compile(r"\.(?:m|c)?[jt]s$")


def detect_language(command: Sequence[str], build: str | None) -> str:
    """`go`, `js` or `python` when the command or the build says so; `other` when nothing does."""
    program = Path(command[0]).name if command else ""
    if program in _JS_RUNTIMES or any(_JS_FILE.search(word) for word in command[1:2]):
        return "js"
    if re.match(r"python(?:\d[\d.]*)?$", program) or (command and command[0].endswith(".py")):
        return "python"
    if program == "go" or (build and re.search(r"\bgo\s+(?:build|install|run)\b", build)):
        return "go"
    executable = which(command[0]) if command else None
    if executable and _is_go_binary(Path(executable)):
        return "go"
    return "other"


def _is_go_binary(path: Path) -> bool:
    try:
        with open(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as binary:
            if not stat.S_ISREG(os.fstat(binary.fileno()).st_mode):
                return False  # a FIFO or a device is no program, and must not hold the grader
            tail = b""
            read = 0
            while read < _SCAN_LIMIT:
                chunk = binary.read(1 << 20)
                if not chunk:
                    return False
                if _GO_BUILDINFO in tail + chunk:
                    return True
                tail, read = chunk[-len(_GO_BUILDINFO) :], read + len(chunk)
    except OSError:
        return False
    return False


# Whole hints, keyed by a phrase only that hint has: each is Python all through.
_HINTS: dict[str, dict[str, str]] = {
    "Keep a list of call names, extend it with each round's calls": {
        "go": "Keep a slice of call names, append each round's calls to it, and put it in the error: "
        'fmt.Errorf("gave up after %d tool rounds; call sequence was %v: check what these tools return", '
        "maxToolRounds, history).",
        "js": "Keep an array of call names, push each round's calls onto it, and put it in the error: "
        'new Error(`gave up after ${MAX_TOOL_ROUNDS} tool rounds; call sequence was [${history.join(" ")}]: '
        "check what these tools return`).",
    },
    "Count the rounds; after the fifth, raise an exception": {
        "go": "Count the rounds; after the fifth, return an error instead of a response (and exit non-zero "
        "with it on stderr), so the caller knows the loop gave up.",
        "js": "Count the rounds; after the fifth, throw an Error instead of returning (and exit non-zero "
        "with it on stderr), so the caller knows the loop gave up.",
    },
    "Send the failure back as the call's result, marked so the model can tell": {
        "go": "Send the failure back as the call's result, marked so the model can tell: "
        'skyl.ToolErrorMessage(call.ID, "ERROR: " + err.Error()), or a run(call) that returns "ERROR: ..." text.',
        "js": "Send the failure back as the call's result, marked so the model can tell: "
        "toolResultMessage(call.id, `ERROR: ${error.message}`, true).",
    },
    "Text arrives as TextDelta fragments; each call as ToolCallStart (id, name)": {
        # Go's skyl has these very events (skyl.TextDelta, skyl.ToolCallStart, ...): only its names change.
        "go": "Text arrives as skyl.TextDelta fragments; each call as skyl.ToolCallStart (ID, Name), then "
        "skyl.ToolCallDelta fragments of its JSON arguments, keyed by event.Index. Join each call's fragments "
        "and parse them once, after the stream ends. skyl.MessageEnd carries the "
        "stop reason, usage, model and id: copy them from it, never guess them from the calls.",
        # A JavaScript program reads the provider's own events: no skyl event names to point at.
        "js": "Text arrives in delta events; each call as a start event (its id and name), then fragments of its "
        "JSON arguments keyed by the event's index (Chat: delta.tool_calls[i].function.arguments; Anthropic: "
        "input_json_delta). Join each call's fragments and JSON.parse them once, after the stream ends. The "
        "last events carry the stop reason, usage, model and id: copy them, never guess them from the calls.",
    },
    # The program graders' own hints (`programs._program_lessons`), said in each language's API.
    "With SANDBOX_STREAM=1, ask for a stream on every request": {
        "go": "With SANDBOX_STREAM=1 (sandbox.Stream is true), stream every request: stream, err := "
        "client.Stream(ctx, req), then resp, err := skyl.CollectStream(stream) rebuilds the turn (or feed each "
        "stream.Event() to a skyl.Collector). Append resp.Message as usual; a stream that broke returns an "
        "error, never a turn.",
        "js": "With SANDBOX_STREAM=1, send stream: true in every request body (Gemini: "
        ":streamGenerateContent?alt=sse) and rebuild the turn from its events, as assemble() does in "
        "examples/js/loop.mjs: text deltas joined, each call's argument fragments joined by index and "
        "JSON.parse'd once the stream ends.",
    },
    "Start the tool request of every call in the turn before waiting for any of them": {
        "go": "Start a goroutine for every call of the turn before waiting for any (a sync.WaitGroup, each "
        "goroutine writing its output into outputs[i]), wg.Wait(), then append the results in call order.",
        "js": "Start every call of the turn before awaiting any: const outputs = await Promise.all(calls.map(run)) "
        "runs them together and keeps call order; then append the results in that order.",
    },
    "The provider said to try again later: wait its hint": {
        "go": "The provider said to try again later. Catch it with var perr *skyl.ProviderError; "
        "errors.As(err, &perr): retry only when perr.Status is 429, 503 or 529, or 0 (the connection broke before "
        "the answer was whole), after time.Sleep(perr.RetryAfter) (a short backoff of your own when it is 0), "
        "sending the same req again. Any other status (a 400: the request itself is wrong; a 401, 403 or 404: "
        "the key or the model is) is returned at once: exit non-zero with it on stderr.",
        "js": "The provider said to try again later: retry only a ProviderError whose status is 429, 503 or 529, "
        "or 0 (the connection broke before the answer was whole), after its retryAfter seconds (errorOf in "
        "examples/js/loop.mjs reads retry-after-ms, retry-after and Gemini's retryDelay; a short backoff of your "
        "own when it is null): await new Promise((resolve) => setTimeout(resolve, error.retryAfter * 1000)), then "
        "send the same request again. Throw any other status at once (a 400: the request itself is wrong; a 401, "
        "403 or 404: the key or the model is), and exit non-zero with it on stderr.",
    },
    "Retry around the model request alone: append the turn and run its tools once": {
        "go": "Retry around client.Complete (or client.Stream and skyl.CollectStream) alone: append resp.Message "
        "and run its tools once, after the answer arrived whole. A stream that broke before its end makes "
        "skyl.CollectStream return a *skyl.ProviderError with Status 0 and no turn: keep nothing of it, and ask "
        "again.",
        "js": "Retry around the model request alone: append the turn and run its tools once, after its answer "
        "arrived whole. A stream that ended before its end event ([DONE], message_stop, response.completed) or "
        "a body cut short is an error (loop.mjs throws incomplete()), never half appended.",
    },
    "A failing tool is information for the model, not a reason to stop: when a tool request answers": {
        "go": "A failing tool is information for the model, not a reason to stop: when sandbox.Run(ctx, call) "
        "returns an error, send it back as that call's result, marked as one: skyl.ToolErrorMessage(call.ID, "
        '"ERROR: "+err.Error()), then ask the model again.',
        "js": "A failing tool is information for the model, not a reason to stop: when the tool request answers "
        "{ error }, send it back as that call's result, marked as one: toolResultMessage(call.id, "
        "`ERROR: ${ran.error}`, true), then ask the model again.",
    },
    "a tool result's content must be a str (convert other values with str())": {
        "go": "The provider could not read the request. Check what you put in the messages: a tool result's "
        "content must be a string (fmt.Sprint or json.Marshal other values), its call id the call's own.",
        "js": "The provider could not read the request. Check what you put in the messages: a tool result's "
        "content must be a string (JSON.stringify other values), its call id the call's own.",
    },
}

# API names, Python's first; longest first where one contains another.
_NAMES: list[tuple[str, str, str]] = [
    # How the results of one turn's concurrent calls keep (or lose) call order: asyncio's words in 08's
    # hints and `_checks`' headlines, said as goroutines and promises.
    (
        "With asyncio, gather() returns results in the order of its arguments.",
        "With goroutines, write each call's result into its own slot of a slice (results[i] for the i-th "
        "call), not in the order they finish.",
        "Promise.all returns the results in the order of its promises, whatever order they settle in.",
    ),
    (
        "with asyncio.as_completed or the done set of asyncio.wait, or sorted",
        "read from a channel as the goroutines finished, or sorted",
        "pushed as each promise settled, or sorted",
    ),
    (
        "(asyncio.gather returns them in that order)",
        "(a slice indexed by the call's position keeps that order whatever goroutine finishes first)",
        "(Promise.all returns them in that order)",
    ),
    ("kept in a dict keyed by tool name", "kept in a map keyed by tool name", "kept in an object keyed by tool name"),
    (
        "mark it is_error=True or word it as an error",
        "send it with skyl.ToolErrorMessage (is_error on Anthropic) or word it as an error",
        "send it with toolResultMessage(call.id, text, true) (is_error on Anthropic) or word it as an error",
    ),
    ("StopReason.TOOL_USE", "skyl.StopToolUse", 'stopReason "tool_use"'),
    ("json.loads", "json.Unmarshal", "JSON.parse"),
    ("skyl.assistant_text(resp.text())", "skyl.AssistantText(resp.Text())", '{ role: "assistant", text: resp.text }'),
    ("skyl.tool_result_message(call.id,", "skyl.ToolResultMessage(call.ID,", "toolResultMessage(call.id,"),
    ("skyl.tool_result_message", "skyl.ToolResultMessage", "toolResultMessage"),
    ("resp.tool_calls()", "resp.ToolCalls()", "resp.toolCalls"),
    ("resp.stop_reason", "resp.StopReason", "resp.stopReason"),
    ("resp.message", "resp.Message", "resp.message"),
    ("resp.text()", "resp.Text()", "resp.text"),
    ("req.messages", "req.Messages", "req.messages"),
    ("req.model", "req.Model", "req.model"),
    ("call.id", "call.ID", "call.id"),
    ("event.reasoning", "event.Reasoning", "event.reasoning"),
    ("event.index", "event.Index", "event.index"),
    ("raise once it is hit", "return an error once it is hit", "throw once it is hit"),
    (
        "raise an exception once the bound (5) is hit",
        "return an error once the bound (5) is hit",
        "throw an Error once the bound (5) is hit",
    ),
]
_NAME = {"go": 1, "js": 2}


def translate(text: str, language: str) -> str:
    """One piece of feedback (a headline, a rule, a hint) in the names of `language`: a hint that is
    Python all through is replaced whole; Python and unknown languages keep the text as it is."""
    column = _NAME.get(language)
    if column is None:
        return text
    for phrase, versions in _HINTS.items():
        if phrase in text:
            return versions[language]
    for names in _NAMES:
        text = text.replace(names[0], names[column])
    return text


_language: ContextVar[str] = ContextVar("feedback_language", default="python")


def current_language() -> str:
    """The language the feedback being written is for (`speaking`)."""
    return _language.get()


@contextmanager
def speaking(language: str) -> Iterator[None]:
    """Write the feedback of what runs inside in `language`'s names (see `Feedback.render`)."""
    token = _language.set(language)
    try:
        yield
    finally:
        _language.reset(token)
