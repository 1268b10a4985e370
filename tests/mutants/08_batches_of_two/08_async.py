"""Breaks "run the calls of one turn concurrently": the calls run in batches of two, so a turn of
three has only two in flight at once.

Caught by test_runs_the_calls_of_a_turn_concurrently[parallel_calls-*]: the feedback says how many
calls ran at once (2 of 3), not "one at a time".
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
        outputs: list[str] = []
        for start in range(0, len(calls), 2):  # two at a time, to go easy on the tools
            outputs += await asyncio.gather(*(run(call) for call in calls[start : start + 2]))
        for call, output in zip(calls, outputs, strict=True):
            req.messages.append(skyl.tool_result_message(call.id, output))
    raise skyl.ToolLoopError(f"gave up after 5 tool rounds; call sequence was {history}: check what these tools return")
