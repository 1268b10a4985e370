"""`sandbox serve`'s app under a real uvicorn, in a thread, on a free port of 127.0.0.1."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import uvicorn

import sandbox


@contextlib.contextmanager
def serving(engine: sandbox.Engine) -> Iterator[str]:
    """Serve `engine` until the block ends; yields the base URL, http://127.0.0.1:PORT."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(sandbox.SandboxApp(engine), log_level="warning", access_log=False)
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(1000):
        if instance.started:
            break
        threading.Event().wait(0.01)
    assert instance.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        instance.should_exit = True
        thread.join(10)
        sock.close()
