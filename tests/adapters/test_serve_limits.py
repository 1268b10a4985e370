"""`sandbox serve` against clients that try to take it down: slow or huge heads, slow bodies, oversized
bodies, a thousand idle connections, and a large request in flight while a small one waits.

Raw sockets to 127.0.0.1 only, every wait bounded, every connection closed by the test. The server
runs in a child process started with the common open-file limit of 1,024, with 1-second idle (and
head) and body deadlines so that the tests wait seconds, not the defaults' tens of seconds.
"""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import IO, Any

import httpx
import pytest
import uvicorn

import sandbox
from sandbox.adapters._serve import QuietLog
from tests.reliability.test_server import ROOT, _free_port, _wait_until_up

resource = pytest.importorskip("resource")

_SERVE = (
    "import sys, sandbox; sandbox.serve(sandbox.Engine(), host='127.0.0.1', port=int(sys.argv[1]), "
    "keep_alive=1.0, body_timeout=1.0, log_level='info')"
)
DEADLINE = 30.0
"""Generous: each limit acts within about a second; a busy machine may take many times that."""


def _common_file_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[int, IO[bytes]]]:
    with tempfile.TemporaryFile() as log:
        port = _free_port()
        process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, str(port)], stdout=log, stderr=log, cwd=ROOT, preexec_fn=_common_file_limit
        )
        try:
            if not _wait_until_up(process, f"http://127.0.0.1:{port}"):
                log.seek(0)
                pytest.fail(f"sandbox serve did not start:\n{log.read().decode(errors='replace')[-2000:]}")
            yield port, log
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - the server exits on SIGTERM
                process.kill()
                process.wait()


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    return sock


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (or the deadline passes: then the test fails)."""
    data = b""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk
    raise AssertionError(f"the server kept the connection open past {DEADLINE} s; got {data[:200]!r}")


@pytest.mark.slow
def test_an_idle_connection_is_closed(served: tuple[int, IO[bytes]]) -> None:
    with _connect(served[0]) as sock:
        assert _read_all(sock) == b""


@pytest.mark.slow
def test_a_head_sent_a_byte_at_a_time_is_cut_off(served: tuple[int, IO[bytes]]) -> None:
    head = b"POST /v1/messages HTTP/1.1\r\nhost: x\r\n" + b"x-slow: " + b"a" * 400
    with _connect(served[0]) as sock:
        closed = False
        for byte in head:  # 400+ bytes at 20 ms each: 8 s, well past the 1 s deadline
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.02)
        assert closed or _read_all(sock) == b""


def test_a_head_over_64_kib_is_refused_with_a_400_that_says_so(served: tuple[int, IO[bytes]]) -> None:
    """The server stops reading a head at 64 KiB, rather than keep whatever a client sends in memory."""
    line = b"x-filler: " + b"a" * 8000 + b"\r\n"
    with _connect(served[0]) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nhost: x\r\n")
        try:
            for _ in range(1000):  # 8 MB, if nothing stopped it
                sock.sendall(line)
        except OSError:  # the server closed the connection: what it answered is still readable
            pass
        answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert b"The request head is over 65536 bytes" in answer


@pytest.mark.slow
def test_a_body_sent_a_byte_at_a_time_gets_a_408(served: tuple[int, IO[bytes]]) -> None:
    with _connect(served[0]) as sock:
        sock.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n{")
        sock.settimeout(0.05)
        answer = b""
        for _ in range(400):  # one byte every ~50 ms until the answer comes (bounded: about 20 s)
            try:
                sock.sendall(b" ")
                answer += sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if answer:
                sock.settimeout(DEADLINE)
                answer += _read_all(sock)
                break
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b"did not arrive within 1 s" in answer


def test_an_announced_body_over_the_limit_gets_413_before_any_body_is_sent(served: tuple[int, IO[bytes]]) -> None:
    with _connect(served[0]) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"content-length: 1073741824\r\n\r\n"
        )
        answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert b"1073741824 announced or read" in answer


def test_an_unannounced_body_over_the_limit_gets_413_without_being_read_to_the_end(
    served: tuple[int, IO[bytes]],
) -> None:
    """64 MiB sent chunked: the 413 comes once 4 MiB are read, and the rest is never read."""
    sent = 0
    with _connect(served[0]) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n")
        piece = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
        stop = threading.Event()

        def writer() -> None:
            nonlocal sent
            try:
                while sent < 64 * 1024 * 1024 and not stop.is_set():
                    sock.sendall(piece)
                    sent += 65536
            except OSError:
                return

        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        answer = _read_all(sock)
        stop.set()
        thread.join(timeout=DEADLINE)
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert sent < 64 * 1024 * 1024


def test_a_thousand_idle_connections_do_not_stop_the_server(served: tuple[int, IO[bytes]]) -> None:
    port, _ = served
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    held = 1100
    if soft < held + 200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, held + 200), hard))
    sockets = []
    try:
        for _ in range(held):
            sockets.append(socket.create_connection(("127.0.0.1", port), timeout=DEADLINE))
        health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=DEADLINE)
        assert health.status_code == 200
    finally:
        for sock in sockets:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_log_holds_no_traceback_after_all_that(served: tuple[int, IO[bytes]]) -> None:
    _, log = served
    log.seek(0)
    assert b"Traceback" not in log.read()


def test_the_quiet_log_keeps_each_trouble_to_a_few_one_line_records() -> None:
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    logger = logging.getLogger("sandbox.test.quiet")
    logger.propagate = False
    logger.addHandler(Keep())
    logger.addFilter(QuietLog(burst=3, window=3600))
    for _ in range(1000):
        try:
            raise OSError(24, "Too many open files")
        except OSError:
            logger.exception("Exception in ASGI application")
    assert len(records) == 3
    assert all("\n" not in record and "Too many open files" in record for record in records)


class _HeldEngine(sandbox.Engine):
    """Holds any large request until released: a stand-in for a request that takes the engine long."""

    def __init__(self) -> None:
        super().__init__()
        self.large_started = threading.Event()
        self.release = threading.Event()

    def handle(self, method: str, path: str, body: bytes, **options: Any) -> sandbox.Exchange:
        if len(body) > 1024 * 1024:
            self.large_started.set()
            self.release.wait(timeout=DEADLINE)
        return super().handle(method, path, body, **options)


def test_a_small_request_is_answered_while_a_large_one_is_in_flight() -> None:
    engine = _HeldEngine()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(sandbox.SandboxApp(engine), log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    large: dict[str, Any] = {}
    try:
        deadline = time.monotonic() + DEADLINE
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        big = {"model": "plain_text", "messages": [{"role": "user", "content": "x" * (2 * 1024 * 1024)}]}

        def send_large() -> None:
            large["status"] = httpx.post(f"{base}/v1/chat/completions", json=big, timeout=DEADLINE).status_code

        sender = threading.Thread(target=send_large)
        sender.start()
        assert engine.large_started.wait(timeout=DEADLINE)
        small = {"model": "plain_text", "messages": [{"role": "user", "content": "hi"}]}
        answer = httpx.post(f"{base}/v1/chat/completions", json=small, timeout=DEADLINE)
        assert answer.status_code == 200 and not engine.release.is_set()
        assert json.loads(answer.content)["choices"][0]["message"]["content"]
    finally:
        engine.release.set()
        sender.join(timeout=DEADLINE)
        server.should_exit = True
        thread.join(timeout=DEADLINE)
        sock.close()
    assert large == {"status": 200}
