"""Breaks "Append resp.Message before any tool result": the results are appended before the turn.

Caught by test_finishes_the_task: the provider rejects results that come before their turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from sandbox import skyl

MAX_ROUNDS = 5


async def complete(
    client: skyl.AsyncClient, req: skyl.Request, run: Callable[[skyl.ToolCall], Awaitable[str]]
) -> skyl.Response:
    for _ in range(MAX_ROUNDS):
        resp = await client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        outputs = await asyncio.gather(*(run(call) for call in calls))
        for call, output in zip(calls, outputs, strict=True):
            req.messages.append(skyl.tool_result_message(call.id, output))
        req.messages.append(resp.message)
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds")
