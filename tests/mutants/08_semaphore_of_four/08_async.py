"""Breaks "run the calls of one turn concurrently": a semaphore lets four calls run at once, so a turn
of more than four never has all its calls in flight.

Caught by test_any_task_runs_each_turn_concurrently (generated turns of up to 8 calls): the feedback
says at most 4 ran at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from sandbox import skyl


async def complete(
    client: skyl.AsyncClient, req: skyl.Request, run: Callable[[skyl.ToolCall], Awaitable[str]]
) -> skyl.Response:
    limit = asyncio.Semaphore(4)

    async def limited(call: skyl.ToolCall) -> str:
        async with limit:
            return await run(call)

    history: list[str] = []
    for _ in range(5):
        resp = await client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        history.extend(call.name for call in calls)
        outputs = await asyncio.gather(*(limited(call) for call in calls))
        for call, output in zip(calls, outputs, strict=True):
            req.messages.append(skyl.tool_result_message(call.id, output))
    raise skyl.ToolLoopError(f"gave up after 5 tool rounds; call sequence was {history}: check what these tools return")
