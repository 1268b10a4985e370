"""Breaks "Append resp.Message before any tool result": the loop appends the results, then the turn.

Caught by test_finishes_the_task_within_the_bound: the provider rejects results that come before their turn.
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
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
        req.messages.append(resp.message)
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
