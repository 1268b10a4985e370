"""Correct: the retry is a recursive call with the attempts left."""

from __future__ import annotations

import time
from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5
MAX_ATTEMPTS = 3
RETRYABLE = {0, 429, 503, 529}
BACKOFF = 0.05
"""Seconds before the first retry when the provider gives no hint; doubled on each retry."""


def _ask(client: skyl.Client, req: skyl.Request, stream: bool, left: int = MAX_ATTEMPTS) -> skyl.Response:
    try:
        return skyl.collect_stream(client.stream(req)) if stream else client.complete(req)
    except skyl.ProviderError as err:
        if err.status not in RETRYABLE:
            raise
        if left == 1:
            raise RuntimeError(
                f"{MAX_ATTEMPTS} attempts, all refused with HTTP {err.status}: "
                "check your quota and the provider's status page"
            ) from err
        time.sleep(BACKOFF if err.retry_after is None else err.retry_after)
        return _ask(client, req, stream, left - 1)


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
