"""Breaks "each result carries its own call's output": gathered outputs keyed by tool name collide.

Caught by test_runs_the_calls_of_a_turn_concurrently[parallel_calls-*]: Paris gets Tokyo's weather.
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
        outputs = await asyncio.gather(*(run(call) for call in calls))
        by_name = {call.name: output for call, output in zip(calls, outputs, strict=True)}
        for call in calls:
            req.messages.append(skyl.tool_result_message(call.id, by_name[call.name]))
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds")
