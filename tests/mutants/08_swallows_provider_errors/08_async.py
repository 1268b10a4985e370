"""Breaks "a provider's error is not a tool's": the loop catches whatever `client.complete` raises and
asks again, so a refused request is sent again until the bound, and the caller never sees the refusal.

Caught by test_a_refused_request_reaches_the_caller: the provider refused request 2, and complete()
sent more requests, then raised its own ToolLoopError.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from sandbox import skyl


async def _result(call: skyl.ToolCall, run: Callable[[skyl.ToolCall], Awaitable[str]]) -> skyl.Message:
    try:
        return skyl.tool_result_message(call.id, await run(call))
    except Exception as exc:
        return skyl.tool_result_message(call.id, f"ERROR: {exc}", is_error=True)


async def complete(
    client: skyl.AsyncClient, req: skyl.Request, run: Callable[[skyl.ToolCall], Awaitable[str]]
) -> skyl.Response:
    history: list[str] = []
    for _ in range(5):
        try:
            resp = await client.complete(req)
        except Exception:  # keep going whatever happens: the next request may work
            continue
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        history.extend(call.name for call in calls)
        req.messages.extend(await asyncio.gather(*(_result(call, run) for call in calls)))
    raise skyl.ToolLoopError(f"gave up after 5 tool rounds; call sequence was {history}: check what these tools return")
