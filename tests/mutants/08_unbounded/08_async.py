"""Breaks "Loop until resp.ToolCalls() is empty, with a hard bound": the async loop has no bound.

Caught by test_raises_once_the_bound_is_hit: the sandbox's request budget stops the runaway.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from sandbox import skyl


async def complete(
    client: skyl.AsyncClient, req: skyl.Request, run: Callable[[skyl.ToolCall], Awaitable[str]]
) -> skyl.Response:
    while True:
        resp = await client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        outputs = await asyncio.gather(*(run(call) for call in calls))
        for call, output in zip(calls, outputs, strict=True):
            req.messages.append(skyl.tool_result_message(call.id, output))
