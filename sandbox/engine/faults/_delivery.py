"""How an adapter sends a faulted answer: waits before the first byte and between frames, and a
connection that closes after some frames (or before any byte).

The in-process adapters raise the HTTP library's `RemoteProtocolError` where a real connection would
break, so clients see what they would over a socket; the ASGI app aborts the socket itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CUT_MESSAGE", "Delivery", "asgi_deliver", "async_frames", "sync_frames"]

CUT_MESSAGE = "peer closed connection without sending complete message body (a sandbox fault cut it)"


@dataclass(frozen=True)
class Delivery:
    """How to send an exchange's chunks."""

    first_byte: float = 0.0
    """Seconds before the first byte."""
    between: float = 0.0
    """Seconds between chunks."""
    cut_after: int | None = None
    """Close the connection after this many chunks (0: before any byte); None: send them all."""


def sync_frames(chunks: tuple[bytes, ...], delivery: Delivery, error: type[Exception]) -> Iterator[bytes]:
    if delivery.first_byte:
        time.sleep(delivery.first_byte)
    for index, chunk in enumerate(chunks):
        if index == delivery.cut_after:
            raise error(CUT_MESSAGE)
        if index and delivery.between:
            time.sleep(delivery.between)
        yield chunk
    if delivery.cut_after is not None and delivery.cut_after >= len(chunks):
        raise error(CUT_MESSAGE)


async def async_frames(chunks: tuple[bytes, ...], delivery: Delivery, error: type[Exception]) -> AsyncIterator[bytes]:
    if delivery.first_byte:
        await asyncio.sleep(delivery.first_byte)
    for index, chunk in enumerate(chunks):
        if index == delivery.cut_after:
            raise error(CUT_MESSAGE)
        if index and delivery.between:
            await asyncio.sleep(delivery.between)
        yield chunk
    if delivery.cut_after is not None and delivery.cut_after >= len(chunks):
        raise error(CUT_MESSAGE)


Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


async def asgi_deliver(
    send: Send, status: int, headers: dict[str, str], chunks: tuple[bytes, ...], delivery: Delivery
) -> None:
    """Send the answer through ASGI as `delivery` says. A cut aborts the socket: uvicorn's `send` is
    its request cycle's bound method, whose `transport` is the connection; after the abort uvicorn
    sees the client gone and sends nothing more (no 500, no log line)."""
    if delivery.first_byte:
        await asyncio.sleep(delivery.first_byte)
    if delivery.cut_after == 0:
        await _abort(send)
        return
    raw = [(name.encode(), value.encode()) for name, value in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    for index, chunk in enumerate(chunks):
        if index == delivery.cut_after:
            await _abort(send)
            return
        if index and delivery.between:
            await asyncio.sleep(delivery.between)
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    if delivery.cut_after is not None:
        await _abort(send)
        return
    await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _abort(send: Send) -> None:
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    if transport is not None:
        transport.abort()
        await asyncio.sleep(0)  # let connection_lost run, so the server knows the client is gone
        await asyncio.sleep(0)
        return
    raise ConnectionAbortedError(CUT_MESSAGE)  # a server without a reachable transport: it closes on this
