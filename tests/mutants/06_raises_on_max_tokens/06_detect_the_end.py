"""Breaks "prefer the call list over the stop reason": a turn cut at max_tokens is treated as a failure.

Caught by test_ends_when_the_call_list_is_empty[stop_reason_mismatch-anthropic]: the turn still carried
a call, so the loop should have run it and gone on.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(MAX_ROUNDS):
        resp = client.complete(req)
        if resp.stop_reason == skyl.StopReason.MAX_TOKENS:
            raise skyl.ToolLoopError("the model ran out of tokens")
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds")
