"""Correct: asyncio.wait for every task of the turn, then read the results in call order (a task's
exception, when it has one, as an error result)."""

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
        for call in resp.tool_calls():
            task = tasks[call.id]
            failure = task.exception()
            if failure is None:
                req.messages.append(skyl.tool_result_message(call.id, task.result()))
            else:
                req.messages.append(skyl.tool_result_message(call.id, f"ERROR: {failure}", is_error=True))
    raise RuntimeError("tool loop bound (5) reached")
