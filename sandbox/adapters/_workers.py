"""`sandbox serve --workers N`: the sandbox in N processes on one listening socket, under uvicorn's
own process manager (`uvicorn.supervisors.Multiprocess`).

The parent binds the socket, starts the workers, and does nothing else: it restarts a worker that
dies (its in-flight answers are lost, the others go on), and on SIGTERM or SIGINT it asks each worker
to shut down as one `sandbox serve` does (stop accepting, give what is in flight its grace) and waits
for them all. Each worker builds its own engine with `make_engine`, so the engines must share a store
(`--store`): what one worker keeps, any other may be asked to continue. The workshop room, when it
is served, is built in each worker too, around that worker's sandbox, on the room's one file.

May touch: the listening socket, its worker processes (started, signalled and waited for by pid),
and through each worker's engine the store it names.
"""

from __future__ import annotations

import functools
import signal
from collections.abc import Callable, Iterable
from types import FrameType

from uvicorn.supervisors import Multiprocess

from ..engine._engine import Engine
from ._asgi import BODY_TIMEOUT, SandboxApp
from ._serve import (
    GRACE,
    KEEP_ALIVE,
    WRITE_TIMEOUT,
    ASGIApp,
    SendTimeout,
    listen,
    quiet_logs,
    raise_open_file_limit,
    server_config,
    signals_end_the_server,
)

__all__ = ["before_shutdown", "serve_workers"]


def serve_workers(
    make_engine: Callable[[], Engine],
    *,
    workers: int,
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
) -> None:
    """Serve the sandbox in `workers` processes until SIGTERM or SIGINT, as `serve` does in one.
    `make_engine` is called once in each worker, and `wrap` (an app around the sandbox's: the
    workshop room) once on each worker's app: both must pickle (a `functools.partial` of `Engine` or
    of a module's function does), and what they make must share its state through a store."""
    sock = listen(host, port)
    try:
        if ready is not None:
            ready(sock.getsockname()[1])
        factory = functools.partial(_worker_app, make_engine, wrap, body_timeout, tuple(cors_origins), write_timeout)
        config = server_config(
            factory,
            log_level=log_level,
            keep_alive=keep_alive,
            grace=grace,
            forwarded_allow_ips=forwarded_allow_ips,
            workers=workers,
        )
        quiet_logs()
        with signals_end_the_server():
            Multiprocess(config, sockets=[sock]).run()
    finally:
        sock.close()


def _worker_app(
    make_engine: Callable[[], Engine],
    wrap: Callable[[SandboxApp], ASGIApp] | None,
    body_timeout: float,
    cors_origins: tuple[str, ...],
    write_timeout: float,
) -> ASGIApp:
    """One worker's app, built in the worker (uvicorn calls it as the app factory)."""
    raise_open_file_limit()
    quiet_logs()
    app = SandboxApp(make_engine(), body_timeout=body_timeout, cors_origins=cors_origins)
    return SendTimeout(wrap(app) if wrap is not None else app, write_timeout)


def before_shutdown(stop: Callable[[], None]) -> None:
    """In a worker process, as its app is built: `stop()` runs as the worker begins to shut down (on
    SIGTERM or SIGINT), before uvicorn's own handler, as `serve`'s `on_stop` does in one process."""
    for number in (signal.SIGTERM, signal.SIGINT):
        then = signal.getsignal(number)
        if callable(then):
            signal.signal(number, functools.partial(_stop_then, stop, then))


def _stop_then(
    stop: Callable[[], None], then: Callable[[int, FrameType | None], object], number: int, frame: FrameType | None
) -> None:
    stop()
    then(number, frame)
