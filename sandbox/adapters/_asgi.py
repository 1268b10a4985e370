"""The ASGI door: `SandboxApp`, the sandbox as a plain ASGI app for any ASGI server (uvicorn, hypercorn).

`sandbox serve` does not go through it (it has an HTTP protocol of its own, `sandbox.adapters.server`), but
both answer through the same `server.Front`, so health, HEAD, CORS, Content-Encoding and the body
limit behave alike. Here, a body over the limit is refused with a 413 as soon as its
`Content-Length` (or the bytes read so far) pass the limit, without reading the rest; a body must
arrive within `body_timeout` seconds; a large request's engine work runs in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from ..engine._engine import Engine
from ..engine.faults._delivery import asgi_deliver
from .server import Front, Reply, sender_of

__all__ = ["BODY_TIMEOUT", "SandboxApp"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

BODY_TIMEOUT = 30.0
"""Seconds a client has to send the whole body: 4 MiB at 140 KB/s, far slower than any LAN."""


class SandboxApp:
    """Serves all four wire formats at their real paths, SSE included."""

    def __init__(
        self, engine: Engine, *, body_timeout: float = BODY_TIMEOUT, cors_origins: Iterable[str] = ("*",)
    ) -> None:
        self.engine = engine
        self.body_timeout = body_timeout
        self.front = Front(engine, cors_origins=cors_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        method: str = scope["method"]
        headers = _headers(scope)
        early = self.front.early(method, path, headers)
        if early is not None:
            await _send(send, early)
            return
        try:
            body, size = await asyncio.wait_for(_read_body(receive, self.front.max_body), self.body_timeout)
        except asyncio.TimeoutError:
            await _send(send, self.front.slow(method, path, headers, self.body_timeout))
            return
        if body is None:
            await _send(send, self.front.oversized(method, path, headers, size))
            return
        sender = sender_of(scope.get("client"))  # the connection: see the repeat guard
        query = scope.get("query_string", b"").decode("latin-1")
        if self.front.heavy(path, body, headers):
            reply = await asyncio.to_thread(self.front.answer, method, path, query, headers, body, sender)
        else:
            reply = self.front.answer(method, path, query, headers, body, sender)
        await _send(send, reply)


def _headers(scope: Scope) -> dict[str, str]:
    """Header names lower-cased, repeated ones joined with commas (as HTTP allows)."""
    out: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


async def _read_body(receive: Receive, limit: int) -> tuple[bytes | None, int]:
    """The body, or None (with the size read so far) as soon as it passes `limit`: the rest is never read."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(parts), size
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None, size
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts), size


async def _send(send: Send, reply: Reply) -> None:
    headers = {**reply.headers, "connection": "close"} if reply.close else reply.headers
    if reply.delivery is not None:  # a scripted fault: slowed, or the connection cut
        await asgi_deliver(send, reply.status, dict(headers), reply.chunks, reply.delivery)
        return
    raw_headers = [(name.encode(), value.encode()) for name, value in headers.items()]
    await send({"type": "http.response.start", "status": reply.status, "headers": raw_headers})
    last = len(reply.chunks) - 1
    for index, chunk in enumerate(reply.chunks):
        await send({"type": "http.response.body", "body": chunk, "more_body": index < last})
    if not reply.chunks:
        await send({"type": "http.response.body", "body": b""})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
