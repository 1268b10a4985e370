"""Breaks "one tool message per call": the append sits after the loop over the calls, so only the
last call's result goes in (an indentation slip).

Caught by test_answers_every_call_of_every_turn_in_order[parallel_calls-*]: the other calls have no result.
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
        for call in calls:
            result = skyl.tool_result_message(call.id, run(call))
        req.messages.append(result)
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
