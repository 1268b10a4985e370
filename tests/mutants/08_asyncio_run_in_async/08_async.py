"""Breaks "await the coroutines of one turn together": asyncio.run(run(call)) inside async code.

Caught by test_runs_the_calls_of_a_turn_concurrently: asyncio.run cannot start a second event loop
inside the one already running complete(); inside async code, await instead.
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
        for call in calls:
            output = asyncio.run(run(call))  # type: ignore[arg-type]
            req.messages.append(skyl.tool_result_message(call.id, output))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
