"""Breaks "Each ToolResultMessage carries its own CallID": later rounds answer with the first round's call ids.

Caught by test_answers_every_call_of_every_turn_in_order[parallel_rounds-*]: round two's results answer round one's ids.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    ids: list[str] = []
    for _ in range(5):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        if not ids:
            ids = [call.id for call in calls]
        req.messages.append(resp.message)
        for index, call in enumerate(calls):
            call_id = ids[index] if index < len(ids) else call.id
            req.messages.append(skyl.tool_result_message(call_id, run(call)))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
