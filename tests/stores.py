"""Kept-state stores for the tests: each backend in turn, and Debian's `redis-server` on a loopback port.

`kept_store` (a fixture in tests/conftest.py) runs a test once per backend; every engine the test
makes (a transport, `mock()`, `sandbox.Engine()`) then keeps its state there. `redis_server` starts a
server of its own: a free 127.0.0.1 port, no persistence (`--save '' --appendonly no`), a temporary
folder, stopped by its pid. Where `redis-server` or the `redis` client is missing the tests that need
them skip, or fail under SANDBOX_REQUIRE_REDIS=1 (set by `.ci/run`, which installs both).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

BACKENDS = ("memory", "sqlite", "redis")


def require_redis() -> str:
    """The path of `redis-server`, with the client importable; skip or fail the test otherwise."""
    found = shutil.which("redis-server")
    try:
        import redis  # noqa: F401
    except ImportError:
        found = None
    if found is None:
        if os.environ.get("SANDBOX_REQUIRE_REDIS") == "1":
            pytest.fail(
                "SANDBOX_REQUIRE_REDIS=1 but redis-server or the redis client is missing: "
                "apt-get install redis-server, and pip install -e '.[dev]'."
            )
        pytest.skip("redis-server or the redis client is not installed")
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def redis_server(folder: Path, port: int | None = None) -> Iterator[str]:
    """A fresh `redis-server` on 127.0.0.1 (on `port`, or a free one) that keeps nothing on disk; its
    URL (database 0)."""
    binary = require_redis()
    import redis

    port = port or _free_port()
    log = folder / f"redis-{port}.log"
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    command += ["--dir", str(folder), "--logfile", str(log)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url)
        for _ in range(500):  # up to about 5 s on a busy machine
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if process.poll() is not None:
                    pytest.fail(f"redis-server exited: {log.read_text() if log.exists() else ''}")
                time.sleep(0.01)
        client.close()
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
