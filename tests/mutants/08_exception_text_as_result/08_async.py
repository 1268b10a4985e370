"""Breaks "the failure becomes an error result": a failing call's exception text goes back as an
ordinary result, neither marked is_error nor worded as an error, so the model reads it as the tool's
answer.

Caught by test_a_failing_call_becomes_an_error_result: the result for get_weather(city='Tokyo') does
not say that its tool failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from sandbox import skyl


async def _output(call: skyl.ToolCall, run: Callable[[skyl.ToolCall], Awaitable[str]]) -> str:
    try:
        return await run(call)
    except Exception as exc:
        return str(exc)


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
        outputs = await asyncio.gather(*(_output(call, run) for call in calls))
        for call, output in zip(calls, outputs, strict=True):
            req.messages.append(skyl.tool_result_message(call.id, output))
    raise skyl.ToolLoopError(f"gave up after 5 tool rounds; call sequence was {history}: check what these tools return")
