"""Breaks "Append it once per turn, then one tool message per call": the turn is appended inside the loop over calls.

Caught by test_answers_every_call_of_every_turn_in_order[parallel_calls-*]: the provider sees the same turn
once per call.
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
        for call in calls:
            req.messages.append(resp.message)
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
