"""Breaks "Never reconstruct the turn with AssistantText": the loop appends assistant_text(resp.text()).

Caught by test_finishes_the_task_within_the_bound: the provider rejects the results, which answer nothing.
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
        req.messages.append(skyl.assistant_text(resp.text()))
        for call in calls:
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
