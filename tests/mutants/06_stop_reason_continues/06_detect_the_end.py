"""Breaks "Loop until resp.ToolCalls() is empty": it keeps going while stop_reason says TOOL_USE, even with no calls.

Caught by test_ends_when_the_call_list_is_empty[stop_reason_mismatch-*]: the final answer claims tool_use,
so the loop asks again.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(MAX_ROUNDS):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls and resp.stop_reason is not skyl.StopReason.TOOL_USE:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds")
