"""Breaks "Prefer the empty call list over StopToolUse": it returns only when stop_reason is END_TURN.

Caught by test_ends_when_the_call_list_is_empty[stop_reason_mismatch-*]: the answer says tool_use, so the loop
asks again.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(MAX_ROUNDS):
        resp = client.complete(req)
        if resp.stop_reason is skyl.StopReason.END_TURN:
            return resp
        req.messages.append(resp.message)
        for call in resp.tool_calls():
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds")
