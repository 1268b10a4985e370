"""Breaks "a legitimate task rarely exceeds three rounds": a bound of 2 rounds gives up on multi_step.

Caught by test_finishes_the_task_within_the_bound[multi_step-*]: it raised instead of finishing a three-round task.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(2):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError("gave up after 2 tool rounds")
