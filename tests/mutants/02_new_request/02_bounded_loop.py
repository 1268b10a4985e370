"""Breaks "send the same request every round": each round builds a new Request without the tools.

Caught by test_finishes_the_task_within_the_bound: the provider rejects a request that no longer declares its tools.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    messages = list(req.messages)
    for _ in range(5):
        resp = client.complete(skyl.Request(model=req.model, messages=messages))
        calls = resp.tool_calls()
        if not calls:
            return resp
        messages.append(resp.message)
        for call in calls:
            messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
