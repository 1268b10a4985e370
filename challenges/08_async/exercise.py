"""Challenge 08: concurrent tool calls with asyncio.

Grade it with `pytest challenges/08_async` or `sandbox check 8`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sandbox import skyl


async def complete(
    client: skyl.AsyncClient, req: skyl.Request, run: Callable[[skyl.ToolCall], Awaitable[str]]
) -> skyl.Response:
    """The bounded tool loop with an `AsyncClient` and an async `run`.

    The calls of one turn are independent: run them concurrently, then append their results in call
    order, after the assistant turn. A call whose `run` raises gets an error result (as in 07); an
    error from the provider reaches the caller. At most 5 requests; raise an exception when the bound
    is hit.
    """
    # TODO: write the async loop, running each turn's calls concurrently.
    raise NotImplementedError
