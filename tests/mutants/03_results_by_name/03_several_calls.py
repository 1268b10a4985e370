"""Breaks "each result carries its own call's output": outputs keyed by tool name collide.

Caught by test_answers_every_call_of_every_turn_in_order[parallel_calls-*]: Paris gets Tokyo's weather.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(5):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        outputs = {call.name: run(call) for call in calls}
        for call in calls:
            req.messages.append(skyl.tool_result_message(call.id, outputs[call.name]))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
