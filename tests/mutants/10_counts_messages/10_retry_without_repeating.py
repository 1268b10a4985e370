"""Breaks 'the give-up error names the attempts': it names the status and what to check, and a count
of messages where the attempts belong.

Caught by test_gives_up_with_an_error_that_says_why: '3 messages' is not a count of attempts.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5
MAX_ATTEMPTS = 3
RETRYABLE = {0, 429, 503, 529}
BACKOFF = 0.01
"""Seconds before the first retry when the provider gives no hint; doubled on each retry. Short, since the
sandbox's 503s and broken connections are scripted and no one judges this wait; against a real provider,
start near a second (the official SDKs start at 0.5 s)."""


def _ask(client: skyl.Client, req: skyl.Request, stream: bool) -> skyl.Response:
    """One model request, tried up to MAX_ATTEMPTS times. A stream that breaks raises inside
    collect_stream, so nothing of it is ever returned."""
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            return skyl.collect_stream(client.stream(req)) if stream else client.complete(req)
        except skyl.ProviderError as err:
            if err.status not in RETRYABLE:
                raise  # the request itself is wrong: sending it again gets the same error
            if attempt == MAX_ATTEMPTS:
                kind = err.error_type or "no error type"
                raise skyl.ToolLoopError(
                    f"gave up on a request of {len(req.messages)} messages: the provider kept answering status "
                    f"{err.status} ({kind}). Check the provider's status page and your rate limits."
                ) from err
            hint = err.retry_after if err.retry_after is not None else BACKOFF * 2 ** (attempt - 1)
            time.sleep(min(hint, 30.0))
    raise AssertionError("unreachable: the last attempt returns or raises")


def _result(call: skyl.ToolCall, run: Callable[[skyl.ToolCall], str]) -> skyl.Message:
    """The call's result; a tool that fails is an error result, as in challenge 07."""
    try:
        return skyl.tool_result_message(call.id, run(call))
    except Exception as exc:  # noqa: BLE001 - any failure of the tool goes back to the model
        return skyl.tool_result_message(call.id, f"ERROR: {type(exc).__name__}: {exc}", is_error=True)


def complete(
    client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str], stream: bool = False
) -> skyl.Response:
    """The bounded loop; only `_ask` retries, so each turn is appended and its tools run once."""
    history: list[str] = []
    for _ in range(MAX_ROUNDS):
        resp = _ask(client, req, stream)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            history.append(call.name)
            req.messages.append(_result(call, run))
    raise skyl.ToolLoopError(
        f"gave up after {MAX_ROUNDS} tool rounds; call sequence was [{' '.join(history)}]: "
        "check what these tools return"
    )
