"""Instructions a request inside `sandbox serve`, by callgrind: what a server change moves, counted
rather than timed, so an A/B needs one run of each side on a busy machine as on an idle one.

    python bench/server.py                     the server outside the engine (the canned engine), 16 clients
    python bench/server.py --kind sandbox      the whole server, engine included
    python bench/server.py --clients 1 --stream

The server child (`_serve.py protocol|sandbox`) runs under `valgrind --tool=callgrind` twice, once
answering 200 requests and once 1,200, from `--clients` kept-alive connections that each send one
request of the serve rows' pool and read its answer, in turn; the figure is the difference of the
two counts over 1,000, so start-up and shutdown cancel out. Counted: user-space instructions of the
server process (the event loop, httptools, uvicorn, the ASGI app, the engine), not the kernel's system
calls. May touch: sockets to 127.0.0.1 and a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _serve import _free_port, _up, request_pool  # noqa: E402


def _answered(buffer: bytes) -> bool:
    """Whether `buffer` holds a whole answer: its content-length read, or a chunked body's last chunk."""
    head, found, rest = buffer.partition(b"\r\n\r\n")
    if not found:
        return False
    length = re.search(rb"(?im)^content-length: *(\d+)", head)
    return len(rest) >= int(length[1]) if length else rest.endswith(b"0\r\n\r\n")


def counted(kind: str, clients: int, pool: list[bytes], requests: int) -> int:
    """Instructions the server child executed from start to exit, answering `requests` requests."""
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        child = subprocess.Popen(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                str(HERE / "_serve.py"),
                kind,
                str(port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        deadline = time.monotonic() + 120
        while not _up(port):
            if child.poll() is not None or time.monotonic() > deadline:
                child.kill()
                raise SystemExit(
                    f"the {kind} server did not start under valgrind: {child.communicate()[1].decode()[-500:]}"
                )
            time.sleep(0.2)
        connections = [socket.create_connection(("127.0.0.1", port), timeout=60) for _ in range(clients)]
        sent = 0
        while sent < requests:
            batch = connections[: min(clients, requests - sent)]
            for connection in batch:
                connection.sendall(pool[sent % len(pool)])
                sent += 1
            for connection in batch:
                buffer = b""
                while not _answered(buffer):
                    buffer += connection.recv(65536)
        for connection in connections:
            connection.close()
        child.send_signal(signal.SIGTERM)
        stderr = child.communicate(timeout=120)[1].decode()
    found = re.search(r"Collected : (\d+)", stderr)
    if found is None:
        raise SystemExit(f"callgrind failed: {stderr[-1000:]}")
    return int(found[1])


def main() -> None:
    parser = argparse.ArgumentParser(description="Instructions a request inside sandbox serve, by callgrind.")
    parser.add_argument(
        "--kind", choices=("protocol", "sandbox"), default="protocol", help="protocol: the canned engine"
    )
    parser.add_argument("--clients", type=int, default=16, help="kept-alive connections, one request in flight on each")
    parser.add_argument("--stream", action="store_true", help="the streamed pool")
    options = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("this needs valgrind (apt-get install valgrind)")
    if options.clients < 1:
        raise SystemExit("--clients: at least 1")
    pool = request_pool(options.stream, 2000)
    few, many = (counted(options.kind, options.clients, pool, n) for n in (200, 1200))
    mode = "streamed" if options.stream else "plain"
    figure = (many - few) / 1000 / 1000
    print(f"sandbox serve ({options.kind}), {mode}, {options.clients} clients: {figure:.1f}k instructions a request")


if __name__ == "__main__":
    main()
