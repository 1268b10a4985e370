"""The in-process doors hand the engine the request's headers exactly as httpx reads them."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import httpx2
import pytest

from sandbox.adapters._transport import _headers
from sandbox.engine._senders import caller_key


@pytest.mark.parametrize("module", [httpx, httpx2], ids=["httpx", "httpx2"])
@pytest.mark.parametrize(
    "given",
    [
        [("Authorization", "Bearer k"), ("Content-Type", "application/json")],
        [("X-Api-Key", "a"), ("x-api-key", "b")],
        [("X-Key", "caf\u00e9".encode()), ("Accept", b"\xff")],
        [],
    ],
    ids=["plain", "repeated", "non-ascii", "none"],
)
def test_door_headers_are_httpx_items(module: Any, given: list[tuple[str, Any]]) -> None:
    headers = module.Headers(given)
    assert _headers(headers) == dict(headers.items())


def test_caller_key_tells_tasks_apart() -> None:
    """Outside a loop the caller is the thread; inside, each task is its own caller."""
    outside = caller_key()

    async def two() -> list[str]:
        return list(await asyncio.gather(asyncio.create_task(_key()), asyncio.create_task(_key())))

    inside = asyncio.run(two())
    assert outside.startswith("thread:") and "/task:" not in outside
    assert all(key.startswith(outside + "/task:") for key in inside) and inside[0] != inside[1]


async def _key() -> str:
    return caller_key()
