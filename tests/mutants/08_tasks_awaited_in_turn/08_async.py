"""Breaks "the calls of one turn run concurrently": each task is awaited as soon as it is created.

Caught by test_runs_the_calls_of_a_turn_concurrently: the calls of a turn ran one at a time.
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
        req.messages.append(resp.message)
        for call in calls:
            output = await asyncio.create_task(run(call))  # type: ignore[arg-type]
            req.messages.append(skyl.tool_result_message(call.id, output))
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds")
