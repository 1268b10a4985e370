"""The HTTP door: a plain ASGI app over the engine, served by uvicorn (`sandbox serve`).

Plain ASGI keeps the door a few dozen lines with no framework between the socket and the engine.
The body is read with a size limit as it arrives, so an oversized upload is refused without being
held in memory.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ._engine import Engine

__all__ = ["SandboxApp", "serve"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class SandboxApp:
    """Serves all four wire formats at their real paths, SSE included."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        if scope["method"] == "GET" and path in ("/", "/health"):
            await _send(send, 200, {"content-type": "application/json"}, [self._health()])
            return
        body, size = await _read_body(receive, self.engine.max_body_bytes)
        if body is None:
            exchange = self.engine.refuse_oversized(scope["method"], path, size)
        else:
            client = scope.get("client")
            sender = f"{client[0]}:{client[1]}" if client else ""  # the connection: see the repeat guard
            exchange = self.engine.handle(scope["method"], path, body, client=sender)
        await _send(send, exchange.status, exchange.headers, exchange.chunks)

    def _health(self) -> bytes:
        return json.dumps({"status": "ok", "scenarios": sorted(self.engine.scenarios)}).encode()


async def _read_body(receive: Receive, limit: int) -> tuple[bytes | None, int]:
    """The body, or None (with the size read so far) once it passes `limit`."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(parts), size
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            await _drain(receive, message)
            return None, size
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts), size


async def _drain(receive: Receive, message: Message) -> None:
    while message.get("more_body", False):
        message = await receive()
        if message["type"] == "http.disconnect":
            return


async def _send(send: Send, status: int, headers: Any, chunks: Any) -> None:
    raw_headers = [(name.encode(), value.encode()) for name, value in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    last = len(chunks) - 1
    for index, chunk in enumerate(chunks):
        await send({"type": "http.response.body", "body": chunk, "more_body": index < last})
    if not chunks:
        await send({"type": "http.response.body", "body": b""})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def serve(engine: Engine, *, host: str = "127.0.0.1", port: int = 8765, log_level: str = "warning") -> None:
    """Run the sandbox under uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(SandboxApp(engine), host=host, port=port, log_level=log_level, access_log=False)
