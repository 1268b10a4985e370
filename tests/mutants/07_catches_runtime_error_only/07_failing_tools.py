"""Breaks "or name an unknown tool": only RuntimeError is caught, so the KeyError of an unknown tool escapes.

Caught by test_an_unknown_tool_becomes_an_error_result: the KeyError for get_time is reported.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(MAX_ROUNDS):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            try:
                req.messages.append(skyl.tool_result_message(call.id, run(call)))
            except RuntimeError as exc:
                req.messages.append(skyl.tool_result_message(call.id, f"ERROR: {exc}", is_error=True))
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds")
