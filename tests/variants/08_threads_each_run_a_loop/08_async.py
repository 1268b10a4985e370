"""Correct: each call of a turn runs in a thread of its own, on an event loop of its own (asyncio.run),
and the results are appended in call order. Unusual, but the calls are all in flight at once; a thread
whose tool raised hands back its error as the result, marked as one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sandbox import skyl


def _in_a_thread(coroutine: Awaitable[str]) -> tuple[str, bool]:
    async def wait() -> tuple[str, bool]:
        try:
            return await coroutine, False
        except Exception as exc:
            return f"the tool failed: {exc}", True

    return asyncio.run(wait())


async def complete(
    client: skyl.AsyncClient, req: skyl.Request, run: Callable[[skyl.ToolCall], Awaitable[str]]
) -> skyl.Response:
    loop = asyncio.get_running_loop()
    for _ in range(5):
        resp = await client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        with ThreadPoolExecutor(max_workers=len(calls)) as pool:
            futures = [loop.run_in_executor(pool, _in_a_thread, run(call)) for call in calls]
            outputs: list[Any] = await asyncio.gather(*futures)
        for call, (output, failed) in zip(calls, outputs, strict=True):
            req.messages.append(skyl.tool_result_message(call.id, output, is_error=failed))
    raise skyl.ToolLoopError("gave up after 5 tool rounds; check what the tools return")
