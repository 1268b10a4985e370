"""Breaks "Append it once per turn": the turn is appended before the results and again after them.

Caught by test_answers_every_call_of_every_turn_in_order: the provider sees the same turn twice.
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
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
        req.messages.append(resp.message)
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
