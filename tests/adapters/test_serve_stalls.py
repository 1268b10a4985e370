"""`sandbox serve` against clients that stop reading, keep sending, or flood it, and against SIGTERM.

Raw sockets to 127.0.0.1 only, every wait bounded, every connection closed by the test. Each server
runs in a child process with short deadlines (1 s to write, 2 s of shutdown grace) so that the tests
wait seconds, not the defaults'.
"""

from __future__ import annotations

import http.client
import json
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO

import httpx
import pytest

import sandbox
from sandbox import skyl
from tests.adapters.test_serve_sockets import read_answer, request
from tests.reliability.test_server import ROOT, _free_port, _wait_until_up

resource = pytest.importorskip("resource")

DEADLINE = 30.0
STALLED = 5
_SERVE = (
    "import sys, sandbox; sandbox.serve(sandbox.Engine(budget=10**6), host='127.0.0.1', port=int(sys.argv[1]), "
    "write_timeout=float(sys.argv[2]), grace=2.0, log_level='info')"
)


@contextmanager
def serving(
    write_timeout: float = 1.0, preexec: Callable[[], None] | None = None
) -> Iterator[tuple[int, subprocess.Popen[bytes], IO[bytes]]]:
    with tempfile.TemporaryFile() as log:
        port = _free_port()
        process = subprocess.Popen(
            [sys.executable, "-c", _SERVE, str(port), str(write_timeout)],
            stdout=log,
            stderr=log,
            cwd=ROOT,
            preexec_fn=preexec,
        )
        try:
            if not _wait_until_up(process, f"http://127.0.0.1:{port}"):
                log.seek(0)
                pytest.fail(f"sandbox serve did not start:\n{log.read().decode(errors='replace')[-2000:]}")
            yield port, process, log
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=DEADLINE)


def big_stream_request() -> bytes:
    """A Responses stream quoting a 3.9 MiB tool result: about 20 MB of SSE frames to send back."""
    transport = sandbox.transport()
    client = skyl.Client("openai-responses", transport=transport)
    scenario = sandbox.get_scenario("single_call")
    req = skyl.Request(model="single_call", messages=[skyl.user_text(scenario.prompt)], tools=list(scenario.tools))
    first = client.complete(req)
    result = "0123456789abcdef" * (250_000 - 1000)
    req.messages += [first.message, skyl.tool_result_message(first.tool_calls()[0].id, result)]
    body = json.loads(client._prepare(req, stream=True)[1])
    body["store"] = False  # nothing kept: the memory measured is the answers'
    data = json.dumps(body).encode()
    head = f"POST /v1/responses HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {len(data)}"
    return f"{head}\r\n\r\n".encode() + data


def rss_kb(pid: int) -> int:
    """The process's resident memory, in KiB."""
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def stalled_reader(port: int, raw: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)  # and never reads
    sock.sendall(raw)
    return sock


def drain(sock: socket.socket) -> tuple[int, bool]:
    """(bytes read, whether the server cut the connection) reading until it closes."""
    total = 0
    deadline = time.monotonic() + DEADLINE
    try:
        while time.monotonic() < deadline:
            chunk = sock.recv(1 << 20)
            if not chunk:
                return total, True
            total += len(chunk)
    except (ConnectionResetError, TimeoutError):
        return total, True
    return total, False


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the server's RSS from /proc")
def test_answers_nobody_reads_are_dropped_and_the_memory_they_held_is_reused() -> None:
    """Three waves of readers that never read a ~20 MB streamed answer: every answer is cut once it
    stops leaving for the 1 s write timeout (none is delivered later), and the memory the server keeps
    afterwards is less than half of what the five answers came to, however many waves came. Five in
    all: the log says each drop until it holds the same line back for a minute."""
    raw = big_stream_request()
    full = 5 * len(raw)  # a Responses stream repeats the text in four done events
    after: list[int] = []
    results: list[tuple[int, bool]] = []
    dropped = 0
    with serving(write_timeout=1.0) as (port, process, log):
        before = rss_kb(process.pid)
        for wave in (2, 2, 1):
            sockets = [stalled_reader(port, raw) for _ in range(wave)]
            dropped += wave
            try:
                deadline = time.monotonic() + DEADLINE
                while time.monotonic() < deadline and _log_text(log).count(DROPPED) < dropped:
                    time.sleep(0.1)
                results += [drain(sock) for sock in sockets]
            finally:
                for sock in sockets:
                    sock.close()
            after.append(rss_kb(process.pid))
        health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=DEADLINE)
        text = _log_text(log)
    assert text.count(DROPPED) == STALLED, text
    assert all(cut and got < full // 2 for got, cut in results), results  # cut, not delivered later
    assert (max(after) - before) * 1024 < STALLED * full // 2, (before, after)
    assert health.status_code == 200


DROPPED = "dropped an answer the client did not read for 1 s"


def _log_text(log: IO[bytes]) -> str:
    log.seek(0)
    return log.read().decode(errors="replace")


@pytest.mark.slow
def test_sigterm_with_a_stalled_reader_exits_0_within_the_grace_and_says_what_was_cut() -> None:
    with serving(write_timeout=60.0) as (port, process, log):
        sock = stalled_reader(port, big_stream_request())
        try:
            assert sock.recv(1024).startswith(b"HTTP/1.1 200")  # the answer is leaving; no more is read
            idle = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)  # closed at once
            process.send_signal(signal.SIGTERM)
            started = time.monotonic()
            status = process.wait(timeout=DEADLINE)
            took = time.monotonic() - started
            idle.close()
        finally:
            sock.close()
        log.seek(0)
        text = log.read().decode(errors="replace")
    assert status == 0, text
    assert took < 2.0 + 8.0, took  # the 2 s grace, and a busy machine's slack
    assert "shutdown: cut an answer still being sent: POST /v1/responses (200) to 127.0.0.1:" in text
    assert "bytes not yet sent" in text
    assert "Traceback" not in text


@pytest.mark.slow
def test_sigterm_lets_an_answer_in_flight_finish() -> None:
    with serving() as (port, process, log):
        with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE) as sock:
            head, body = request(1).split(b"\r\n\r\n", 1)
            sock.sendall(head + b"\r\n\r\n" + body[:10])  # a request in flight when the signal comes
            time.sleep(0.3)
            process.send_signal(signal.SIGTERM)
            time.sleep(0.3)
            sock.sendall(body[10:])
            answer = read_answer(sock)
        assert process.wait(timeout=DEADLINE) == 0
    assert answer.startswith(b"HTTP/1.1 200") and b"connection: close" in answer


@pytest.mark.slow
def test_a_413_is_read_by_clients_still_sending_their_bodies() -> None:
    """Eight clients at once send 8 MiB each (twice the limit), half of them chunked, with
    http.client, which stops at the first failed send: every one reads the 413, none a reset."""
    body = json.dumps({"model": "plain_text", "messages": [{"role": "user", "content": "x" * (8 << 20)}]}).encode()
    statuses: list[object] = []

    def send(chunked: bool) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE)
        try:
            if chunked:
                pieces = (body[start : start + 65536] for start in range(0, len(body), 65536))
                connection.request("POST", "/v1/chat/completions", body=pieces, encode_chunked=True)
            else:
                connection.request("POST", "/v1/chat/completions", body=body)
            statuses.append(connection.getresponse().status)
        except OSError as exc:
            statuses.append(repr(exc))
        finally:
            connection.close()

    with serving() as (port, _, _):
        threads = [threading.Thread(target=send, args=(index % 2 == 1,)) for index in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=DEADLINE)
    assert statuses == [413] * 8


def _one_thousand_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


def test_a_flood_of_idle_and_slow_connections_does_not_turn_newcomers_away() -> None:
    """A server whose open-file limit is 1,024 (soft and hard, as on many machines) gets 1,100
    connections that send nothing or half a head; then well-formed requests on fresh connections
    must all be answered: the oldest idle connections make room, and the log says so."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    held: list[socket.socket] = []
    try:
        with serving(preexec=_one_thousand_files) as (port, _, log):
            for index in range(1100):
                sock = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
                if index % 2:
                    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\n")  # a slow head
                held.append(sock)
            answered = [_probe(port) for _ in range(12)]
            log.seek(0)
            text = log.read().decode(errors="replace")
    finally:
        for sock in held:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert answered == [200] * 12
    assert "closed 60 idle ones to make room" in text


def _probe(port: int) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=DEADLINE) as sock:
        sock.sendall(request(time.monotonic_ns()))
        return int(read_answer(sock)[9:12])
