"""Challenge 10: retry without repeating yourself (beyond the lesson).

Grade it with `pytest challenges/10_retry_without_repeating` or `sandbox check 10`.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5
MAX_ATTEMPTS = 3
"""Attempts of one model request: the first, and two retries."""
RETRYABLE = {0, 429, 503, 529}
"""Statuses worth another attempt: rate limited, unavailable, overloaded, and 0 (the connection broke
before the answer was whole). Anything else, a 400 above all, fails the same way every time."""


def complete(
    client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str], stream: bool = False
) -> skyl.Response:
    """The bounded tool loop of challenge 07, on a provider that sometimes fails.

    Ask the model (with `stream`, `skyl.collect_stream(client.stream(req))`); when it raises a
    `skyl.ProviderError` whose `status` is in RETRYABLE, wait `err.retry_after` seconds (a short
    backoff of your own when it is None) and send the same request again, at most MAX_ATTEMPTS
    times in all, then raise an error that names the status, the attempts and what to check. Never
    retry anything else. Append each turn and run its tools once, after its answer arrived whole; a
    tool that fails becomes an error result, as in challenge 07.
    """
    # TODO: write the loop, with the retries around the model request alone.
    raise NotImplementedError
