"""The HTTP door: a plain ASGI app over the engine, served by uvicorn (`sandbox serve`).

Plain ASGI keeps the door a few dozen lines with no framework between the socket and the engine.
What one client can cost the others is bounded here:

- a body over the limit is refused with a 413 as soon as its `Content-Length` (or the bytes read so
  far) pass the limit, without reading the rest, and the connection is closed;
- a body must arrive within `body_timeout` seconds, and a request head within `head_timeout` seconds
  of the connection opening or of the previous answer (uvicorn has no deadline for a head that
  arrives a byte at a time; `_HeadDeadline` adds one);
- the engine's work on a large request runs in a worker thread, so a small request is answered
  while a large one is in flight (a small one runs inline: a thread hop would cost more than it);
- the server's log says each kind of trouble in one line, at most a few times a minute.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import socket
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ._engine import Engine, Exchange
from ._exceptions import UsageError
from .faults._delivery import asgi_deliver

__all__ = ["SandboxApp", "serve"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

HEAD_TIMEOUT = 10.0
"""Seconds a client has to send a request's head (line and headers): on a new connection, and after
each answer on a kept-alive one. uvicorn already closes an idle kept-alive connection after 5 s."""
BODY_TIMEOUT = 30.0
"""Seconds a client has to send the whole body: 4 MiB at 140 KB/s, far slower than any LAN."""
INLINE_BYTES = 64 * 1024
"""Bodies up to this size are answered on the event loop (well under a millisecond of engine work);
larger ones in a worker thread."""


class SandboxApp:
    """Serves all four wire formats at their real paths, SSE included."""

    def __init__(self, engine: Engine, *, body_timeout: float = BODY_TIMEOUT) -> None:
        self.engine = engine
        self.body_timeout = body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        method: str = scope["method"]
        if method == "GET" and path in ("/", "/health"):
            await _send(send, 200, {"content-type": "application/json"}, [self._health()])
            return
        announced = _content_length(scope)
        if announced is not None and announced > self.engine.max_body_bytes:
            await _send_closing(send, self.engine.refuse_oversized(method, path, announced))
            return
        try:
            body, size = await asyncio.wait_for(_read_body(receive, self.engine.max_body_bytes), self.body_timeout)
        except asyncio.TimeoutError:
            await _send_closing(send, self.engine.refuse_slow(method, path, self.body_timeout))
            return
        if body is None:
            await _send_closing(send, self.engine.refuse_oversized(method, path, size))
            return
        client = scope.get("client")
        sender = f"{client[0]}:{client[1]}" if client else ""  # the connection: see the repeat guard
        query = scope.get("query_string", b"").decode("latin-1")
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope.get("headers", ())}
        if len(body) <= INLINE_BYTES:
            exchange = self.engine.handle(method, path, body, client=sender, query=query, headers=headers)
        else:
            exchange = await asyncio.to_thread(
                self.engine.handle, method, path, body, client=sender, query=query, headers=headers
            )
        if exchange.delivery is not None:  # a scripted fault: slowed, or the connection cut
            await asgi_deliver(send, exchange.status, dict(exchange.headers), exchange.chunks, exchange.delivery)
            return
        await _send(send, exchange.status, exchange.headers, exchange.chunks)

    def _health(self) -> bytes:
        return json.dumps({"status": "ok", "scenarios": sorted(self.engine.scenarios)}).encode()


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length" and value.strip().isdigit():
            return int(value)
    return None


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


async def _send_closing(send: Send, exchange: Exchange) -> None:
    """An answer after which the connection closes: the rest of the body is never read."""
    await _send(send, exchange.status, {**exchange.headers, "connection": "close"}, exchange.chunks)


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
            asyncio.get_running_loop().set_exception_handler(_loop_exception)
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's errors (e.g. `accept()` out of file descriptors) in one line, no traceback."""
    exc = context.get("exception")
    detail = f": {type(exc).__name__}: {exc}" if exc is not None else ""
    logging.getLogger("uvicorn.error").error("%s%s", context.get("message", "event loop error"), detail)


class QuietLog(logging.Filter):
    """One line per record (a traceback becomes its last line), and each message at most `burst`
    times per `window` seconds; the next one allowed says how many were left out. So a flood of slow
    or broken clients cannot fill a disk with tracebacks."""

    def __init__(self, burst: int = 5, window: float = 60.0) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self._seen: dict[str, tuple[float, int, int]] = {}  # message -> (window start, shown, left out)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            record.msg = f"{record.getMessage().rstrip()} ({type(exc).__name__}: {exc})"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        key = f"{record.name}:{record.msg}"
        now = time.monotonic()
        start, shown, left_out = self._seen.get(key, (now, 0, 0))
        if now - start > self.window:
            start, shown = now, 0
        if shown >= self.burst:
            self._seen[key] = (start, shown, left_out + 1)
            return False
        if left_out:
            record.msg = f"{record.getMessage()} ({left_out} more like this were not logged)"
            record.args = None
        if len(self._seen) > 1000:
            self._seen.clear()
        self._seen[key] = (start, shown + 1, 0)
        return True


_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)  # Linux only


def quick_ack(transport: asyncio.BaseTransport) -> None:
    """Acknowledge what was just read at once. A client that writes a request's head and body in two
    segments (http.client, Net::HTTP, ...) holds the body until the head is acknowledged, and on a
    kept-alive connection Linux delays that ACK by about 40 ms: every request would stall. Linux
    clears the flag by itself, so it is set again after each read."""
    sock = transport.get_extra_info("socket")
    if _QUICKACK is not None and sock is not None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
        except OSError:  # pragma: no cover - a socket already closed
            pass


def _head_deadline_protocol(head_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with a deadline for each request head (see the module docstring)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadDeadline(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            quick_ack(self.transport)
            cycle = self.cycle
            super().data_received(data)
            if self.cycle is not cycle:  # a whole new request head arrived
                self._disarm()

        def on_response_complete(self) -> None:
            cycle = self.cycle
            self._arm()
            super().on_response_complete()
            if self.cycle is not cycle or self.transport.is_closing():  # a pipelined request, or closed
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._head_timer = self.loop.call_later(head_timeout, self._expire)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _expire(self) -> None:
            self._head_timer = None
            if not self.transport.is_closing():
                self.transport.close()

    return HeadDeadline


def serve(
    engine: Engine,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    log_level: str = "warning",
    head_timeout: float = HEAD_TIMEOUT,
    body_timeout: float = BODY_TIMEOUT,
    ready: Callable[[], None] | None = None,
) -> None:
    """Run the sandbox under uvicorn until interrupted; `ready` runs once the port is bound."""
    import uvicorn

    sock = _listen(host, port)
    if ready is not None:
        ready()
    _raise_open_file_limit()
    quiet = QuietLog()
    for name in ("uvicorn", "uvicorn.error", "asyncio"):
        logging.getLogger(name).addFilter(quiet)
    config = uvicorn.Config(
        SandboxApp(engine, body_timeout=body_timeout),
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        http=_head_deadline_protocol(head_timeout),
        timeout_keep_alive=5,
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a bad --host or a taken --port is one clear error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET  # as uvicorn chooses
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on an accepted socket only when its protocol says
    # TCP, and accepted sockets inherit the listener's. Set on the listener too (Linux copies it).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
    except (OSError, OverflowError, UnicodeError) as exc:
        sock.close()
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
            advice = "Choose another --port, or stop what uses it."
        else:
            advice = "Use an address of this machine for --host (127.0.0.1, or 0.0.0.0 for every interface)."
        raise UsageError(f"cannot listen on {host}:{port}: {reason}. {advice}") from None
    sock.set_inheritable(True)
    return sock


def _raise_open_file_limit() -> None:
    """Each connection holds a file descriptor: with the usual soft limit of 1,024, a thousand idle
    connections would stop the server accepting any. Raise it to the hard limit the system allows."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):  # pragma: no cover - some systems refuse; the soft limit stays
            pass
