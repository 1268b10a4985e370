"""Breaks "gather the turn's calls": asyncio.gather(list) instead of asyncio.gather(*list).

Caught by test_runs_the_calls_of_a_turn_concurrently: gather refuses a list, so no tool ever runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

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
        outputs = await asyncio.gather([run(call) for call in calls])  # type: ignore[call-overload]
        for call, output in zip(calls, outputs, strict=True):
            req.messages.append(skyl.tool_result_message(call.id, output))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
