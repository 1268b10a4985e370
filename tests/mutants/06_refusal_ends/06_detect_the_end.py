"""Breaks "Prefer the empty call list over StopToolUse": a refusal or a stop sequence ends the loop, calls or not.

Caught by test_ends_on_the_call_list_whatever_the_stop_reason[openai]/[anthropic] only: the catalogue never
pairs those stop reasons with calls (the other two formats cannot).
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

FINAL = (skyl.StopReason.END_TURN, skyl.StopReason.REFUSAL, skyl.StopReason.STOP_SEQUENCE)


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(5):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls or resp.stop_reason in FINAL[1:]:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
