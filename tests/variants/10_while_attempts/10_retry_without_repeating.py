"""Correct: retries counted in a while loop; the give-up error is a custom exception."""

from __future__ import annotations

import time
from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5
MAX_ATTEMPTS = 3
RETRYABLE = {0, 429, 503, 529}
BACKOFF = 0.05
"""Seconds before the first retry when the provider gives no hint; doubled on each retry."""


class ProviderUnavailable(Exception):
    pass


def _ask(client: skyl.Client, req: skyl.Request, stream: bool) -> skyl.Response:
    attempts = 0
    while attempts < MAX_ATTEMPTS:
        attempts += 1
        try:
            if stream:
                with client.stream(req) as events:
                    return skyl.collect_stream(events)
            return client.complete(req)
        except skyl.ProviderError as err:
            if err.status in RETRYABLE and attempts < MAX_ATTEMPTS:
                time.sleep(err.retry_after or BACKOFF)
                continue
            if err.status in RETRYABLE:
                raise ProviderUnavailable(
                    f"{err.provider} answered {err.status} {attempts} times in a row; try again later"
                ) from err
            raise
    raise AssertionError("unreachable")


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
