"""Breaks "results still in call order": results are appended as the calls finish (asyncio.as_completed).

Caught by test_runs_the_calls_of_a_turn_concurrently: when the calls finish out of order, so do the results.
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

        async def answer(call: skyl.ToolCall) -> skyl.Message:
            return skyl.tool_result_message(call.id, await run(call))

        for finished in asyncio.as_completed([answer(call) for call in calls]):
            req.messages.append(await finished)
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds")
