"""Breaks "the loop is the same with await": client.complete(req) is called without await.

Caught by every test but the bound's: resp is a coroutine, not a Response, and the request is never
sent. One failure per test, in that test, saying to await the client.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from sandbox import skyl


async def complete(
    client: skyl.AsyncClient, req: skyl.Request, run: Callable[[skyl.ToolCall], Awaitable[str]]
) -> skyl.Response:
    for _ in range(5):
        resp = client.complete(req)
        calls = resp.tool_calls()  # type: ignore[attr-defined]
        if not calls:
            return resp  # type: ignore[return-value]
        req.messages.append(resp.message)  # type: ignore[attr-defined]
        outputs = await asyncio.gather(*(run(call) for call in calls))
        for call, output in zip(calls, outputs, strict=True):
            req.messages.append(skyl.tool_result_message(call.id, output))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
