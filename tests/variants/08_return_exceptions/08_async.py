"""Correct: gather(return_exceptions=True), so one failing call becomes an error result instead of a crash."""

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
        outputs = await asyncio.gather(*(run(call) for call in calls), return_exceptions=True)
        req.messages.append(resp.message)
        for call, output in zip(calls, outputs, strict=True):
            if isinstance(output, BaseException):
                req.messages.append(skyl.tool_result_message(call.id, f"ERROR: {output}", is_error=True))
            else:
                req.messages.append(skyl.tool_result_message(call.id, output))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
