"""Breaks "a tool result is a string": run(call) is not awaited, so a coroutine object becomes the result.

Caught by test_finishes_the_task: the result sent for the call is not its tool's output.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sandbox import skyl


async def complete(
    client: skyl.AsyncClient, req: skyl.Request, run: Callable[[skyl.ToolCall], Awaitable[str]]
) -> skyl.Response:
    for _ in range(5):
        resp = await client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            output: Any = run(call)
            req.messages.append(skyl.tool_result_message(call.id, output))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
