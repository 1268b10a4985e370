"""Correct: starts a task per call, then awaits the tasks in call order (they already run concurrently);
a task that failed is answered with is_error=True."""

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
        tasks = [asyncio.ensure_future(run(call)) for call in calls]
        req.messages.append(resp.message)
        for call, task in zip(calls, tasks, strict=True):
            try:
                req.messages.append(skyl.tool_result_message(call.id, await task))
            except Exception as exc:
                req.messages.append(skyl.tool_result_message(call.id, repr(exc), is_error=True))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
