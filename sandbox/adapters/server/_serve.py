"""`sandbox serve`: the listening socket, the event loop, signals and a graceful shutdown.

The socket is bound here (so a bad --host or a taken --port is one clear error) with TCP_NODELAY
and a backlog of thousands: a flood of connections queues in the kernel instead of having its SYNs
dropped, which would make every newcomer wait a second or three for a retransmission. uvloop runs
the loop where it is installed. On SIGTERM or SIGINT the server stops accepting, closes idle
connections, lets what is in flight finish for `grace` seconds, cuts the rest (and logs what was
cut), and returns: `sandbox serve` exits 0. A second signal cuts at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import logging
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..._exceptions import UsageError
from ...engine._engine import Engine
from .._tcp import tcp_socket
from ._answer import Front
from ._connection import SWEEP, Connection, Limits
from ._cycle import ASGIApp
from ._pool import Pool, keep_big_blocks_mapped

if TYPE_CHECKING:
    from .._asgi import SandboxApp

__all__ = ["BACKLOG", "GRACE", "QuietLog", "background", "serve"]

GRACE = 5.0
"""Seconds in-flight answers get to finish after SIGTERM or SIGINT."""
BACKLOG = 4096
"""Connections the kernel may hold before they are accepted (capped by net.core.somaxconn)."""

log = logging.getLogger("sandbox.serve")


def serve(
    engine: Engine,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    log_level: str = "warning",
    head_timeout: float = Limits.head_timeout,
    body_timeout: float = Limits.body_timeout,
    write_timeout: float = Limits.write_timeout,
    grace: float = GRACE,
    cors_origins: Iterable[str] = ("*",),
    ready: Callable[[], None] | None = None,
    wrap: Callable[[SandboxApp], ASGIApp] | None = None,
) -> None:
    """Serve the sandbox until SIGTERM or SIGINT; `ready` runs once the port is bound.

    `wrap` puts an ASGI app around the sandbox's (the workshop room mounts itself beside it): every
    request then goes through it, with the same limits, deadlines and shutdown."""
    sock = _listen(host, port)
    if ready is not None:
        ready()
    _raise_open_file_limit()
    keep_big_blocks_mapped()
    _configure_log(log_level)
    limits = Limits(head_timeout=head_timeout, body_timeout=body_timeout, write_timeout=write_timeout)
    front = Front(engine, cors_origins=cors_origins)
    app = None
    if wrap is not None:
        from .._asgi import SandboxApp  # not at the top: the ASGI app answers through this package

        app = wrap(SandboxApp(engine, body_timeout=body_timeout, cors_origins=cors_origins))
    loop = _new_loop()
    _freeze_start_up()
    try:
        loop.run_until_complete(_run(sock, front, limits, grace, asyncio.Event(), on_signals=True, app=app))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        loop.close()
        sock.close()


@contextlib.contextmanager
def background(engine: Engine, *, host: str = "127.0.0.1", port: int = 0, grace: float = GRACE) -> Iterator[str]:
    """`sandbox serve` in a thread of this process until the block ends; yields its base URL
    (`http://127.0.0.1:PORT`, a free port unless `port` is given). For tests that drive a real
    server over sockets: the same protocol, limits and shutdown as the command."""
    sock = _listen(host, port)
    bound = sock.getsockname()[1]
    loop = _new_loop()
    stop = asyncio.Event()
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(_run(sock, Front(engine), Limits(), grace, stop, started=started.set))
        loop.run_until_complete(loop.shutdown_default_executor())

    thread = threading.Thread(target=run, name="sandbox-serve", daemon=True)
    thread.start()
    try:
        if not started.wait(30):  # pragma: no cover - a machine too busy to start a thread
            raise RuntimeError("sandbox serve did not start within 30 s")
        yield f"http://{host}:{bound}"
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30 + grace)
        if not thread.is_alive():
            loop.close()
        sock.close()


async def _run(
    sock: socket.socket,
    front: Front,
    limits: Limits,
    grace: float,
    stop: asyncio.Event,
    *,
    on_signals: bool = False,
    started: Callable[[], None] | None = None,
    app: ASGIApp | None = None,
) -> None:
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(_loop_exception)
    connections = Pool(_connection_cap(), loop)
    server = await loop.create_server(lambda: Connection(front, limits, connections, app), sock=sock, backlog=BACKLOG)
    signals = [signal.SIGTERM, signal.SIGINT] if on_signals else []
    for number in signals:
        try:
            loop.add_signal_handler(number, _on_signal, stop, connections)
        except NotImplementedError:  # pragma: no cover - Windows: the handler runs between loop steps
            signal.signal(number, lambda *_: loop.call_soon_threadsafe(_on_signal, stop, connections))
    sweeper = loop.create_task(_sweep(connections))
    if started is not None:
        started()
    try:
        await stop.wait()
        log.info("shutting down: %d connection(s) open", len(connections))
        server.close()  # no new connections; the listening socket stays ours to close
        await _drain(connections, grace)
    finally:
        sweeper.cancel()
        for number in signals:
            try:
                loop.remove_signal_handler(number)
            except NotImplementedError:  # pragma: no cover - Windows
                signal.signal(number, signal.SIG_DFL)


async def _sweep(connections: Pool) -> None:
    """Every deadline of every connection, enforced from one timer (see `Connection.tick`)."""
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(SWEEP)
        connections.sweep(loop.time())


def _on_signal(stop: asyncio.Event, connections: Pool) -> None:
    if not stop.is_set():
        stop.set()
        return
    log.warning("second signal: cutting %d connection(s) now", len(connections))
    for connection in connections:
        if connection.transport is not None:
            connection.transport.abort()


async def _drain(connections: Pool, grace: float) -> None:
    """Close idle connections now, let the others finish their answer within `grace`, cut the rest."""
    for connection in connections:
        connection.closing = True
        if connection.idle() and connection.transport is not None:
            connection.transport.close()
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        for connection in connections:
            if connection.idle() and connection.transport is not None:
                connection.transport.close()
        if not connections:
            break
        await asyncio.sleep(0.05)
    cut = list(connections)
    for connection in cut:
        log.warning("shutdown: cut after the %g s grace: %s", grace, connection.state())
        if connection.transport is not None:
            connection.transport.abort()
    if cut:
        await asyncio.sleep(0)  # let the aborts run their connection_lost
    log.info("stopped: %d connection(s) cut", len(cut))


def _freeze_start_up() -> None:
    """Leave what start-up made (modules, the catalogue, the engine: tens of thousands of objects)
    out of every later garbage collection. They live as long as the process, yet each full
    collection walked them all: 13-25 ms with the loop stopped, every few thousand requests (about
    7 us a request, and a p99 spike), against well under a millisecond once frozen. Garbage made so
    far is collected first, so nothing unreachable is kept. The youngest generation is then collected
    every 7,000 allocations rather than 700: nearly all of a request's objects are freed by their
    count before a collection would look at them (-2.7k instructions a request, bench/server.py
    --kind sandbox at 16 clients), and the cycles that wait longer are few and small."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(7000, 10, 10)


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - not on Windows, nor where it does not install
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _loop_exception(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's errors (e.g. `accept()` out of file descriptors) in one line, no traceback."""
    exc = context.get("exception")
    detail = f": {type(exc).__name__}: {exc}" if exc is not None else ""
    log.error("%s%s", context.get("message", "event loop error"), detail)


def _configure_log(level: str) -> None:
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)-8s %(message)s"))
        log.addHandler(handler)
        log.propagate = False
    log.setLevel(level.upper())
    quiet = QuietLog()
    for name in ("sandbox.serve", "asyncio"):
        logging.getLogger(name).addFilter(quiet)


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


def _listen(host: str, port: int) -> socket.socket:
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
    sock.setblocking(False)
    return sock


def _connection_cap() -> int:
    """Connections held at once: the open-file limit, less a reserve for everything else."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Windows
        return 10_000
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return 100_000 if soft == resource.RLIM_INFINITY else max(64, soft - 64)


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
