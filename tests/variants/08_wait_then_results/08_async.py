"""Correct: asyncio.wait for every task of the turn, then read the results in call order."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from sandbox import skyl


async def complete(
    client: skyl.AsyncClient, req: skyl.Request, run: Callable[[skyl.ToolCall], Awaitable[str]]
) -> skyl.Response:
    rounds = 0
    while rounds < 5:
        rounds += 1
        resp = await client.complete(req)
        if not resp.tool_calls():
            return resp
        tasks = {call.id: asyncio.ensure_future(run(call)) for call in resp.tool_calls()}
        await asyncio.wait(tasks.values())
        req.messages.append(resp.message)
        req.messages += [skyl.tool_result_message(call.id, tasks[call.id].result()) for call in resp.tool_calls()]
    raise RuntimeError("tool loop bound (5) reached")
