"""Breaks "Each ToolResultMessage carries its own CallID": every result of a turn reuses the first call's id.

Caught by test_answers_every_call_of_every_turn_in_order[parallel_calls-*]: the provider pairs results by id.
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
            req.messages.append(skyl.tool_result_message(calls[0].id, run(call)))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
