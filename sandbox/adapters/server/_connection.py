"""One HTTP/1.1 connection of `sandbox serve`: httptools parses, this module answers (`_watch` decides
when to give up on the client).

May touch: the connection's transport and its parser; the engine only through `Front`, and ASGI
apps only through `Cycle`. A few dozen lines of protocol where uvicorn's ASGI cycle used to be: most
requests are answered on the loop's next step after the read that completed them, with no task,
and each answer leaves in one write (head and every SSE frame of a stream, all ready at once, with
its chunked framing made in one join). What one client can cost the others is bounded here and in
`_watch`:

- a request head must arrive within `head_timeout` of the connection opening or of the previous
  answer (at most 64 KiB of it), a body within `body_timeout`; an idle kept-alive connection is
  closed after `keep_alive` seconds;
- a body over the limit is refused with a 413 as soon as its `Content-Length` (or the bytes read
  so far) pass it, and the connection then *lingers*: the rest of the body is read and dropped for
  up to `linger` seconds, so a client still sending reads the 413 instead of a reset;
- an answer the client does not read (its bytes stop leaving) for `write_timeout` seconds is
  dropped, and its memory with it;
- the engine's work on a large or encoded request runs in a worker thread, so a small request is
  answered while a large one is in flight.
"""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.parse
from collections import deque
from collections.abc import Callable
from typing import Any, cast

import httptools

from ...engine.faults._delivery import asgi_deliver
from .._tcp import quick_ack
from ._answer import Front, Reply, sender_of
from ._cycle import ASGIApp, Cycle
from ._framing import encode
from ._pool import Pool
from ._request import LINGER_BYTES, MAX_HEAD, NEVER, SWEEP, Limits, Request
from ._watch import Watch

__all__ = ["SWEEP", "Connection", "Limits"]

log = logging.getLogger("sandbox.serve")


class _Stop(Exception):
    """Raised in a parser callback: the rest of what arrived is not parsed."""


class Connection(Watch, asyncio.Protocol):
    """One client's connection. `connections` is the server's set of them (for shutdown)."""

    def __init__(self, front: Front, limits: Limits, connections: Pool, app: ASGIApp | None = None) -> None:
        self.front = front
        self.app = app
        """An ASGI app that answers every request (the room's, around the sandbox's); None: `front`."""
        self.limits = limits
        self.connections = connections
        self.loop = asyncio.get_running_loop()
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self.queue: deque[Request] = deque()
        self.busy: Request | None = None
        """The request being answered (by the engine, or in a worker thread)."""
        self.current: Request | None = None
        self.closing = False
        """No more requests: the server is shutting down, or the client asked to close."""
        self.write_paused = False
        self.lingering = False
        self.dropped = 0
        self.unsent_seen = 0
        self.last = ("", "", 0)
        """The method, path and status of the last answer (for the log: formatted only when it is written)."""
        self._in_head = False
        self._url = b""
        self._head_size = 0
        self._headers: dict[str, str] = {}
        self._size = 0
        self._now = self.loop.time
        self._deadline = NEVER
        self._then: Callable[[], Any] = _nothing
        self._write_check = NEVER
        self._answered = 0.0
        self.unflushed: bytes | None = None
        """Answers made but not yet written (see `Pool.defer`)."""
        self._answering = False
        """Inside `answer_queued`'s loop (which `_finish` must not start again)."""
        self._waiting = False
        """Idle after an answer: the first byte of a next head turns the keep-alive deadline into
        the head deadline."""
        self._socket: Any = None
        self.peername: tuple[str, int] | None = None
        self.sockname: tuple[str, int] | None = None
        self.cycle: Cycle | None = None
        self._drained = asyncio.Event()
        self._drained.set()

    # -- the transport's calls ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not an asyncio.Transport subclass
        self.peer = sender_of(transport.get_extra_info("peername"))
        self._socket = transport.get_extra_info("socket")
        self.peername = transport.get_extra_info("peername")
        self.sockname = transport.get_extra_info("sockname")
        self.connections.add(self)
        self._answered = self._now()
        self._set(self.limits.head_timeout, self._cut_silent)

    def data_received(self, data: bytes) -> None:
        transport = self.transport
        assert transport is not None
        if self.lingering:
            quick_ack(self._socket)
            self.dropped += len(data)
            if self.dropped > LINGER_BYTES:
                transport.abort()
            return
        if self._waiting:
            self._waiting = False
            self._deadline = self._answered + self.limits.head_timeout
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._refuse_raw(400, "sandbox serve speaks HTTP/1.1 only: no protocol upgrade (WebSocket, h2c).")
            return
        except httptools.HttpParserError as exc:
            cause = exc.__context__
            if isinstance(cause, _Stop):
                return  # a callback answered already and stopped the parse
            if cause is not None:  # pragma: no cover - a bug of ours in a callback
                log.error("sandbox internal error: %s: %s", type(cause).__name__, cause)
                self._refuse_raw(500, f"sandbox internal error: {type(cause).__name__}")
                return
            self._refuse_raw(400, f"Invalid HTTP request received: {exc}.")
            return
        if self._in_head or self.current is not None:
            # A request begun, not whole: its client may hold the rest until this read is acknowledged
            # (see `sandbox.adapters._tcp`). A whole request needs no ACK of its own: its answer carries one.
            quick_ack(self._socket)
        if self.queue:
            self.connections.ready(self)  # answered at the loop's next step, with the others read at this one

    def eof_received(self) -> bool | None:
        """The client will send no more. Finish what it asked (half-close), then close."""
        self.closing = True
        return True if (self.busy or self.queue) and not self.lingering else None

    def pause_writing(self) -> None:
        """The client reads slower than we write: stop reading its next requests until it catches up."""
        self.write_paused = True
        self._drained.clear()
        if self.transport is not None and not self.lingering:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        self.write_paused = False
        self._drained.set()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()
            self.answer_queued()

    def connection_lost(self, exc: Exception | None) -> None:
        self._deadline = self._write_check = NEVER
        self.unflushed = None
        self.connections.discard(self)
        self.queue.clear()
        self.parser = None  # type: ignore[assignment]  # it holds this object: no cycle left for the GC
        self._drained.set()
        if self.cycle is not None:
            self.cycle.gone.set()

    # -- the parser's calls ---------------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._in_head = True
        self._url = b""
        self._head_size = 0
        self._headers = {}
        self._size = 0

    def on_url(self, url: bytes) -> None:
        self._url += url
        self._grow_head(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_size += len(name) + len(value)  # `_grow_head`, inline: three or more calls a request
        if self._head_size > MAX_HEAD:
            self._grow_head(0)
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        headers = self._headers
        headers[key] = f"{headers[key]}, {text}" if key in headers else text

    def on_headers_complete(self) -> None:
        self._in_head = False
        parser = self.parser
        method = parser.get_method().decode("latin-1")
        try:
            url = httptools.parse_url(self._url)
        except httptools.HttpParserInvalidURLError:
            self._refuse_raw(400, "Invalid request target.")
            raise _Stop from None
        path = url.path.decode("latin-1")
        if "%" in path:
            path = urllib.parse.unquote(path)
        request = Request(
            method,
            path,
            (url.query or b"").decode("latin-1"),
            self._headers,
            keep_alive=parser.should_keep_alive(),
            http10=parser.get_http_version() == "1.0",
        )
        self.current = request
        request.reply = self.front.early(method, path, request.headers)
        if request.reply is not None and self.app is not None and not request.reply.close:
            request.reply = None  # the app answers it (only a refused body is refused here)
        if request.reply is not None and request.reply.close:
            self._answer_now(request, request.reply)
            raise _Stop
        if request.headers.get("expect", "").lower() == "100-continue" and self.transport is not None:
            self.flush()
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self._set(self.limits.body_timeout, self._body_too_slow)

    def on_body(self, body: bytes) -> None:
        request = self.current
        assert request is not None
        self._size += len(body)
        if self._size > self.front.max_body:
            self._answer_now(request, self.front.oversized(request.method, request.path, request.headers, self._size))
            raise _Stop
        if request.reply is None:
            request.body.append(body)

    def on_message_complete(self) -> None:
        self._deadline = NEVER
        request = self.current
        assert request is not None
        self.current = None
        self.queue.append(request)  # answered once the parse of this read is over (see `data_received`)

    # -- answering ------------------------------------------------------------------------------------

    def answer_queued(self) -> None:
        """Answer the requests in line, until one is answered elsewhere (a task, a worker thread) or
        the client is behind. A loop, not a recursion through `_finish`: a client may pipeline
        thousands of requests in one read."""
        if self._answering:
            return  # called from `_finish` inside the loop below, which goes on by itself
        self._answering = True
        try:
            while self.busy is None and self.queue and not self.write_paused and not self.lingering:
                transport = self.transport
                if transport is None or transport.is_closing():
                    return
                self._answer_next(self.queue.popleft())
        finally:
            self._answering = False

    def _answer_next(self, request: Request) -> None:
        if request.reply is not None:
            self._send(request, request.reply)
            return
        body = b"".join(request.body)
        if self.app is not None:
            self.busy = request
            self.loop.create_task(self._run_app(self.app, request, body))
            return
        if self.front.heavy(request.path, body, request.headers):
            self.busy = request
            self.loop.create_task(self._in_thread(request, body))
            return
        self._send(request, self._answer(request, body))

    def _answer(self, request: Request, body: bytes) -> Reply:
        try:
            return self.front.answer(request.method, request.path, request.query, request.headers, body, self.peer)
        except Exception as exc:  # noqa: BLE001 - a connection must answer, whatever went wrong
            log.error("sandbox internal error on %s %s: %s: %s", request.method, request.path, type(exc).__name__, exc)
            message = json.dumps({"error": {"message": f"sandbox internal error: {type(exc).__name__}"}}).encode()
            return Reply(500, {"content-type": "application/json"}, (message,))

    async def _in_thread(self, request: Request, body: bytes) -> None:
        reply = await asyncio.to_thread(self._answer, request, body)
        self.busy = None
        if self.transport is not None and not self.transport.is_closing():
            self._send(request, reply)

    def _send(self, request: Request, reply: Reply) -> None:
        transport = self.transport
        assert transport is not None
        keep = request.keep_alive and not reply.close and not self.closing
        if reply.delivery is not None:
            self.busy = request
            self.loop.create_task(self._deliver(request, reply, keep))
            return
        data = encode(reply, keep=keep, chunked=reply.streamed and not request.http10)
        self.last = (request.method, request.path, reply.status)
        if keep:  # written with the other connections' answers of this step (see `Pool.defer`)
            if self.unflushed is None:
                self.unflushed = data
                self.connections.defer(self)
            else:  # pipelined: after the answers before it
                self.unflushed += data
        else:
            self.flush()
            transport.write(data)
        self._finish(keep, close=reply.close)

    def flush(self) -> None:
        """Write the answers held back for this step (see `Pool.defer`), before anything else written."""
        data, self.unflushed = self.unflushed, None
        transport = self.transport
        if data is None or transport is None or transport.is_closing():
            return
        transport.write(data)
        self._watch_writes()

    async def drained(self) -> None:
        """Return once the client has taken enough of what was written (or is gone)."""
        await self._drained.wait()

    async def _run_app(self, app: ASGIApp, request: Request, body: bytes) -> None:
        cycle = self.cycle = Cycle(self, request, body, keep=request.keep_alive and not self.closing)
        try:
            await app(cycle.scope(), cycle.receive, cycle.send)
        except Exception as exc:  # noqa: BLE001 - a connection must answer, whatever went wrong
            log.error("error in the app on %s %s: %s: %s", request.method, request.path, type(exc).__name__, exc)
        self._after(request, cycle)

    async def _deliver(self, request: Request, reply: Reply, keep: bool) -> None:
        """A scripted fault's answer: slowed, or cut (the fault aborts the transport itself)."""
        cycle = self.cycle = Cycle(self, request, b"", keep=keep)
        await asgi_deliver(cycle.send, reply.status, dict(reply.headers), reply.chunks, reply.delivery)  # type: ignore[arg-type]
        self._after(request, cycle)

    def _after(self, request: Request, cycle: Cycle) -> None:
        self.cycle = None
        self.busy = None
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        self.flush()
        if not cycle.started:
            body = json.dumps({"error": {"message": "sandbox internal error: the app sent no answer"}}).encode()
            transport.write(
                encode(Reply(500, {"content-type": "application/json"}, (body,)), keep=False, chunked=False)
            )
            transport.close()
            return
        if not cycle.done:  # an answer begun but not finished: only a close tells the client
            transport.abort()
            return
        self.last = (request.method, request.path, cycle.status)
        self._finish(cycle.keep_after and not self.closing, close=False)

    def _finish(self, keep: bool, *, close: bool) -> None:
        """After an answer: linger (a refused body), close, or wait for the next request."""
        transport = self.transport
        assert transport is not None
        if close:
            self._linger()
            return
        if not keep:
            self._watch_writes()
            transport.close()
            return
        self._answered = self._now()
        self._set(self.limits.keep_alive, self._cut_silent)
        self._waiting = True
        self._watch_writes()
        self.answer_queued()

    def _answer_now(self, request: Request, reply: Reply) -> None:
        """An answer sent before the request was read to its end (a 413, a 408): the connection closes."""
        self._deadline = NEVER
        self.queue.clear()
        self.closing = True
        self._send(request, reply)

    def _refuse_raw(self, status: int, message: str) -> None:
        body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
        request = Request("?", "?", "", {}, keep_alive=False, http10=False)
        self._answer_now(request, Reply(status, {"content-type": "application/json"}, (body,), close=True))

    # -- giving up ------------------------------------------------------------------------------------

    def _body_too_slow(self) -> None:
        request = self.current
        if request is not None:
            self._answer_now(
                request, self.front.slow(request.method, request.path, request.headers, self.limits.body_timeout)
            )

    # -- small things ---------------------------------------------------------------------------------

    def _grow_head(self, size: int) -> None:
        self._head_size += size
        if self._head_size > MAX_HEAD:
            self._refuse_raw(431, f"The request head is over {MAX_HEAD} bytes.")
            raise _Stop


def _nothing() -> None:
    pass
