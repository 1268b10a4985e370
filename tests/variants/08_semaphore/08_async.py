"""Correct: gather under a semaphore that caps concurrency at 8 calls (more than a turn here makes); a
failing call's error text goes back worded as an error, without is_error."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from sandbox import skyl

LIMIT = asyncio.Semaphore(8)


async def limited(run: Callable[[skyl.ToolCall], Awaitable[str]], call: skyl.ToolCall) -> str:
    async with LIMIT:
        try:
            return await run(call)
        except Exception as exc:
            return f"Error: {exc}"


async def complete(
    client: skyl.AsyncClient, req: skyl.Request, run: Callable[[skyl.ToolCall], Awaitable[str]]
) -> skyl.Response:
    for _ in range(5):
        resp = await client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        outputs = await asyncio.gather(*(limited(run, call) for call in calls))
        req.messages.append(resp.message)
        req.messages.extend(map(skyl.tool_result_message, [call.id for call in calls], outputs))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
