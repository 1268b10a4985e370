"""`sandbox serve`: `SandboxApp` (and whatever is mounted around it) under uvicorn.

uvicorn runs it with httptools and uvloop where they install, with the bounds of `_protocol` and
these settings: idle connections closed after `keep_alive` seconds; a backlog of thousands, so a
flood of connections queues in the kernel instead of having SYNs dropped; the open-file limit
raised to what the system allows, and `limit_concurrency` just under it. On SIGTERM or SIGINT the
server stops accepting, closes idle connections, gives what is in flight `grace` seconds, cancels
the rest, and `serve` returns (`sandbox serve` exits 0); a second SIGINT cuts at once.

`SendTimeout` drops an answer whose bytes stop leaving for `write_timeout` seconds: uvicorn's
`send` waits while the client is behind, so a client that stops reading would otherwise hold its
answer in memory for as long as it keeps the connection open.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import signal
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, MutableMapping
from typing import Any

import uvicorn

from .._exceptions import UsageError
from ..engine._engine import Engine
from ._asgi import BODY_TIMEOUT, SandboxApp
from ._protocol import Protocol
from ._tcp import tcp_socket

__all__ = [
    "GRACE",
    "KEEP_ALIVE",
    "WRITE_TIMEOUT",
    "QuietLog",
    "SendTimeout",
    "forwarded_ips_of",
    "listen",
    "make_server",
    "quiet_logs",
    "raise_open_file_limit",
    "serve",
    "server_config",
    "signals_end_the_server",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

GRACE = 5.0
"""Seconds in-flight answers get to finish after SIGTERM or SIGINT."""
KEEP_ALIVE = 5.0
"""Seconds a connection may stay silent: before its first request, between requests, and while a
request head arrives."""
WRITE_TIMEOUT = 5.0
"""Seconds an answer may stop leaving before it is dropped."""
BACKLOG = 4096
"""Connections the kernel may hold before they are accepted (capped by net.core.somaxconn)."""
PIECE = 64 * 1024
"""A large answer is sent in pieces of this size, each within the write timeout."""

log = logging.getLogger("sandbox.serve")


def serve(
    engine: Engine,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    log_level: str = "warning",
    body_timeout: float = BODY_TIMEOUT,
    write_timeout: float = WRITE_TIMEOUT,
    keep_alive: float = KEEP_ALIVE,
    grace: float = GRACE,
    cors_origins: Iterable[str] = ("*",),
    forwarded_allow_ips: str | None = None,
    ready: Callable[[int], None] | None = None,
    wrap: Callable[[SandboxApp], ASGIApp] | None = None,
    on_stop: Callable[[], None] | None = None,
) -> None:
    """Serve the sandbox until SIGTERM or SIGINT. `ready` runs once the port is bound, with its
    number (the one chosen for `port=0`); `wrap` puts an ASGI app around the sandbox's (the workshop
    room mounts itself beside it); `on_stop` runs as the shutdown begins. `forwarded_allow_ips`
    (see `forwarded_ips_of`) names the proxies whose `X-Forwarded-For` says who the client is."""
    sock = listen(host, port)
    try:
        if ready is not None:
            ready(sock.getsockname()[1])
        raise_open_file_limit()
        sandbox_app = SandboxApp(engine, body_timeout=body_timeout, cors_origins=cors_origins)
        app: ASGIApp = wrap(sandbox_app) if wrap is not None else sandbox_app
        server = make_server(
            app,
            log_level=log_level,
            write_timeout=write_timeout,
            keep_alive=keep_alive,
            grace=grace,
            forwarded_allow_ips=forwarded_allow_ips,
            on_stop=on_stop,
        )
        with signals_end_the_server():
            server.run(sockets=[sock])
    finally:
        sock.close()


def make_server(
    app: ASGIApp,
    *,
    log_level: str = "warning",
    write_timeout: float = WRITE_TIMEOUT,
    keep_alive: float = KEEP_ALIVE,
    grace: float = GRACE,
    forwarded_allow_ips: str | None = None,
    on_stop: Callable[[], None] | None = None,
) -> uvicorn.Server:
    """The uvicorn server `serve` runs (`.run(sockets=[...])`), for a caller that binds its own socket."""
    config = server_config(
        SendTimeout(app, write_timeout),
        log_level=log_level,
        keep_alive=keep_alive,
        grace=grace,
        forwarded_allow_ips=forwarded_allow_ips,
    )
    quiet_logs()
    return _Server(config, on_stop)


def server_config(
    app: ASGIApp | Callable[[], ASGIApp],
    *,
    log_level: str = "warning",
    keep_alive: float = KEEP_ALIVE,
    grace: float = GRACE,
    forwarded_allow_ips: str | None = None,
    workers: int = 1,
) -> uvicorn.Config:
    """uvicorn's settings for the sandbox: `Protocol`'s bounds, no access log, and the client's address
    taken from `X-Forwarded-For` only when the peer is one of `forwarded_allow_ips`. With `workers`
    over 1, `app` is a factory each worker process calls (see `sandbox.adapters._workers`)."""
    return uvicorn.Config(
        app,
        factory=workers > 1,
        workers=workers,
        http=Protocol,
        ws="none",
        lifespan="off",
        log_level=log_level,
        access_log=False,
        server_header=False,
        proxy_headers=forwarded_allow_ips is not None,  # else the sender is the connection (see `SandboxApp`)
        forwarded_allow_ips=forwarded_allow_ips,
        timeout_keep_alive=keep_alive,  # type: ignore[arg-type]  # uvicorn types it int; a timer takes any number
        timeout_graceful_shutdown=grace,  # type: ignore[arg-type]
        limit_concurrency=_connection_cap(),
        backlog=BACKLOG,
    )


def forwarded_ips_of(given: str | None) -> str | None:
    """`--forwarded-allow-ips` checked: `*`, or addresses and networks (`10.0.0.0/8`) separated by commas."""
    if given is None:
        return None
    items = [item.strip() for item in given.split(",")]
    if items == ["*"]:
        return "*"
    for item in items:
        try:
            ipaddress.ip_network(item, strict=False) if "/" in item else ipaddress.ip_address(item)
        except ValueError:
            raise UsageError(
                f"--forwarded-allow-ips {given}: {item!r} is not an IP address or network. Name the proxies "
                "whose X-Forwarded-For the sandbox may believe, e.g. --forwarded-allow-ips 127.0.0.1 or "
                "10.0.0.0/8 (or * to believe any peer, when nothing but the proxy can reach the sandbox)."
            ) from None
    return ",".join(items)


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_stop: Callable[[], None] | None) -> None:
        super().__init__(config)
        self.on_stop = on_stop

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.on_stop is not None:
            self.on_stop()
        await super().shutdown(sockets)


class SendTimeout:
    """ASGI middleware: an answer whose bytes stop leaving for `timeout` seconds is dropped and its
    connection cut, and a large body is sent in `PIECE`-sized pieces so that what waits in the
    server's buffer stays small. A cancelled answer (the shutdown's grace is over) is logged."""

    def __init__(self, app: ASGIApp, timeout: float) -> None:
        self.app = app
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        timed = _TimedSend(send, self.timeout, scope)
        try:
            await self.app(scope, receive, timed.send)
        except asyncio.CancelledError:
            if not timed.cut:
                raise  # the answer it cut is logged: the task ends quietly


class _TimedSend:
    """One answer's `send`. It stays a bound method of an object whose `transport` is the
    connection's, as uvicorn's own `send` is, so a scripted cut (`sandbox.engine.faults`) still
    reaches the socket."""

    def __init__(self, send: Send, timeout: float, scope: Scope) -> None:
        self._send = send
        self.transport: Any = getattr(getattr(send, "__self__", None), "transport", None)
        self.timeout = timeout
        self.scope = scope
        self.status = 0
        self.unsent = 0
        """Bytes of the body being sent not yet handed to the server."""
        self.dropped = False
        self.cut = False
        """Cancelled while sending: the shutdown's grace was over."""

    async def send(self, message: Message) -> None:
        if self.dropped:
            return
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
        body = message.get("body", b"")
        if message["type"] != "http.response.body" or len(body) <= PIECE:
            await self._within(message)
            return
        more = bool(message.get("more_body", False))
        for start in range(0, len(body), PIECE):
            self.unsent = len(body) - start
            piece = body[start : start + PIECE]
            await self._within({"type": "http.response.body", "body": piece, "more_body": more or self.unsent > PIECE})
            if self.dropped:
                return
        self.unsent = 0

    async def _within(self, message: Message) -> None:
        transport = self.transport
        if transport is not None and not transport.get_write_buffer_size():
            await self._send(message)  # nothing queued: the server writes at once, without waiting
            return
        try:
            await asyncio.wait_for(self._send(message), self.timeout)
        except asyncio.TimeoutError:
            self.dropped = True
            log.warning("dropped an answer the client did not read for %g s: %s", self.timeout, self._what())
            if transport is not None:
                transport.abort()
                await asyncio.sleep(0)  # let connection_lost run: the server then knows the client is gone
        except asyncio.CancelledError:
            self.cut = True
            log.warning("shutdown: cut an answer still being sent: %s", self._what())
            if transport is not None:
                transport.abort()
            raise

    def _what(self) -> str:
        client = self.scope.get("client")
        peer = f"{client[0]}:{client[1]}" if client else "?"
        buffered = self.transport.get_write_buffer_size() if self.transport is not None else 0
        return (
            f"{self.scope.get('method')} {self.scope.get('path')} ({self.status}) to {peer}, "
            f"{self.unsent + buffered} bytes not yet sent"
        )


@contextlib.contextmanager
def signals_end_the_server() -> Iterator[None]:
    """uvicorn, once shut down, raises the SIGTERM or SIGINT it caught again for the handler it
    found: here a no-op, so `serve` returns and `sandbox serve` exits 0."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    numbers = (signal.SIGTERM, signal.SIGINT)
    previous = {number: signal.signal(number, _ignore) for number in numbers}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _ignore(number: int, frame: object) -> None:
    pass


def quiet_logs() -> None:
    for name in ("sandbox.serve", "uvicorn.error", "asyncio"):
        logger = logging.getLogger(name)
        if not any(isinstance(known, QuietLog) for known in logger.filters):
            logger.addFilter(QuietLog())
    if not log.handlers:  # the same look as uvicorn's lines
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)-8s %(message)s"))
        log.addHandler(handler)
        log.propagate = False


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


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a bad --host or a taken --port is one clear error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = tcp_socket(family)  # TCP_NODELAY on every connection (see sandbox.adapters._tcp)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except (OSError, OverflowError, UnicodeError) as exc:
        sock.close()
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
            advice = "Choose another --port, or stop what uses it."
        else:
            advice = "Use an address of this machine for --host (127.0.0.1, or 0.0.0.0 for every interface)."
        raise UsageError(f"cannot listen on {host}:{port}: {reason}. {advice}") from None
    return sock


def _connection_cap() -> int:
    """Connections held at once: the open-file limit, less a reserve for everything else."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return 10_000
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return 100_000 if soft == resource.RLIM_INFINITY else max(64, soft - 64)


def raise_open_file_limit() -> None:
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
