"""Reference solution for challenge 08: the calls of one turn run concurrently; a failing one still
gets its result (an error), as in challenge 07."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from sandbox import skyl

MAX_ROUNDS = 5


async def _result(call: skyl.ToolCall, run: Callable[[skyl.ToolCall], Awaitable[str]]) -> skyl.Message:
    """The call's result; a tool that raises is answered with its error, which the model can act on."""
    try:
        return skyl.tool_result_message(call.id, await run(call))
    except Exception as exc:  # a tool failure is information for the model, not a reason to stop
        return skyl.tool_result_message(call.id, f"ERROR: {call.name} failed: {exc!r}", is_error=True)


async def complete(
    client: skyl.AsyncClient, req: skyl.Request, run: Callable[[skyl.ToolCall], Awaitable[str]]
) -> skyl.Response:
    """Send `req` until the model stops asking for tools; give up after MAX_ROUNDS requests."""
    history: list[str] = []
    for _ in range(MAX_ROUNDS):
        resp = await client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        history.extend(call.name for call in calls)
        # gather runs the calls concurrently and returns their results in call order.
        req.messages.extend(await asyncio.gather(*(_result(call, run) for call in calls)))
    raise skyl.ToolLoopError(
        f"gave up after {MAX_ROUNDS} tool rounds; call sequence was [{' '.join(history)}]: "
        "check what these tools return"
    )
