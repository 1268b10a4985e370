"""`sandbox serve` in a thread of the test process, on a free port of 127.0.0.1: the command's own
uvicorn server (`sandbox.adapters._serve.make_server`), for the official-SDK tests, the framework
suite and the browser tests; and `sandbox record`'s proxy the same way (`recording`)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import sandbox
from sandbox.adapters._record import Recorder, RecordingProxy
from sandbox.adapters._serve import make_server
from sandbox.adapters._tcp import tcp_socket


@contextlib.contextmanager
def serving(engine: sandbox.Engine, *, forwarded_allow_ips: str | None = None) -> Iterator[str]:
    """Serve `engine` until the block ends; yields the base URL, http://127.0.0.1:PORT."""
    sock = tcp_socket()
    sock.bind(("127.0.0.1", 0))
    server = make_server(sandbox.SandboxApp(engine), grace=1.0, forwarded_allow_ips=forwarded_allow_ips)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="sandbox-serve", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        if not server.started:  # pragma: no cover - a machine too busy to start a thread
            raise RuntimeError("sandbox serve did not start within 30 s")
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


@contextlib.contextmanager
def recording(upstream: str, out: Path, name: str = "recorded") -> Iterator[tuple[str, Recorder]]:
    """The recording proxy in front of `upstream`, under uvicorn in a thread: (its URL, the recorder)."""
    recorder = Recorder(out, name, upstream)
    sock = tcp_socket()
    sock.bind(("127.0.0.1", 0))
    server = make_server(RecordingProxy(upstream, recorder), grace=1.0)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", recorder
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
