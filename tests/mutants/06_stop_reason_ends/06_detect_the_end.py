"""Breaks "Prefer the empty call list over StopToolUse": it returns once stop_reason is not TOOL_USE.

Caught by test_ends_when_the_call_list_is_empty[stop_reason_mismatch-*]: a turn cut at max_tokens still carried a call.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(MAX_ROUNDS):
        resp = client.complete(req)
        if resp.stop_reason is not skyl.StopReason.TOOL_USE:
            return resp
        req.messages.append(resp.message)
        for call in resp.tool_calls():
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds")
