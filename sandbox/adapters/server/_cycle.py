"""One request run through an ASGI app on a `Connection`: for an app put around the sandbox's (the
workshop room's `serve(wrap=...)`), and for a scripted fault's delivery (slowed, or cut mid-answer).

The connection has read the whole body (within its limits and deadlines) before the app runs, so
`receive` hands it over at once, then waits for the client to go. `send` writes as the app sends,
with chunked framing unless the app's one body piece says its length, and waits while the client
is behind. A fault's cut aborts `self.transport`, which is why the connection's transport is here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from ._framing import encode_head

if TYPE_CHECKING:
    from ._connection import Connection
    from ._request import Request

__all__ = ["ASGIApp", "Cycle"]

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]


class Cycle:
    """The ASGI `receive` and `send` of one request."""

    def __init__(self, connection: Connection, request: Request, body: bytes, *, keep: bool) -> None:
        self.connection = connection
        self.transport = connection.transport
        self.request = request
        self.keep = keep
        self._body: bytes | None = body
        self.gone = asyncio.Event()
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.started = False
        self.chunked = False
        self.done = False
        self.keep_after = keep
        """Whether the connection stays open after this answer (not when its end is its close)."""

    def scope(self) -> dict[str, Any]:
        request = self.request
        peer = self.connection.peername
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.0" if request.http10 else "1.1",
            "method": request.method,
            "scheme": "http",
            "path": request.path,
            "raw_path": request.path.encode("latin-1"),
            "query_string": request.query.encode("latin-1"),
            "root_path": "",
            "headers": [(name.encode("latin-1"), value.encode("latin-1")) for name, value in request.headers.items()],
            "client": peer,
            "server": self.connection.sockname,
            "state": {},
        }

    async def receive(self) -> Message:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Message) -> None:
        transport = self.transport
        if self.done or transport is None or transport.is_closing():
            return  # the client is gone: as uvicorn does, what is sent now goes nowhere
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            self.headers = [(bytes(name).lower(), bytes(value)) for name, value in message.get("headers", ())]
            return
        if message["type"] != "http.response.body":
            return
        body = bytes(message.get("body", b""))
        more = bool(message.get("more_body", False))
        out = b""
        if not self.started:
            self.started = True
            sized = any(name == b"content-length" for name, _ in self.headers)
            self.chunked = more and not sized and not self.request.http10
            if not more and not sized:
                self.headers.append((b"content-length", str(len(body)).encode()))
            self.keep_after = self.keep and (self.chunked or sized or not more)
            out = encode_head(self.status, self.headers, chunked=self.chunked, keep=self.keep_after)
        if self.chunked:
            out += b"%x\r\n%s\r\n" % (len(body), body) if body else b""
            if not more:
                out += b"0\r\n\r\n"
        else:
            out += body
        self.connection.flush()  # what this connection answered before goes first
        transport.write(out)
        if not more:
            self.done = True
        await self.connection.drained()
