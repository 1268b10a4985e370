"""Breaks "still append their results in call order": the outputs are collected as they finish
(asyncio.as_completed), then paired with the calls by position, so two calls that finish in the other
order get each other's output.

Caught by test_runs_the_calls_of_a_turn_concurrently: the outputs of two calls are swapped (nothing
was overwritten, and the feedback says so).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from sandbox import skyl


async def complete(
    client: skyl.AsyncClient, req: skyl.Request, run: Callable[[skyl.ToolCall], Awaitable[str]]
) -> skyl.Response:
    history: list[str] = []
    for _ in range(5):
        resp = await client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        history.extend(call.name for call in calls)
        outputs = [await finished for finished in asyncio.as_completed([run(call) for call in calls])]
        for call, output in zip(calls, outputs, strict=True):
            req.messages.append(skyl.tool_result_message(call.id, output))
    raise skyl.ToolLoopError(f"gave up after 5 tool rounds; call sequence was {history}: check what these tools return")
