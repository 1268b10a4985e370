"""`sandbox serve` under load: `sandbox.serve()` in its own process on a free loopback port.

Threads and asyncio tasks hitting one server get the in-process serial run's bytes (the HTTP door adds
nothing), and a burst of 5,000 requests over 50 keep-alive connections loses none and leaves the
server up. The server runs in a child process so that it has a core of its own, as it would in a
workshop, and so that "still up" means the process, not a thread of the test.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.client import HTTPConnection
from pathlib import Path

import httpx
import pytest

import sandbox
from sandbox import skyl
from sandbox.wire import get_wire_format
from sandbox.wire._sse import iter_sse
from tests.reliability.test_concurrency import Recorded, masked, serial_run, shuffled

pytestmark = pytest.mark.slow

BURST = 5_000
CONNECTIONS = 50
SAMPLE = 40
"""Requests each thread or task of the concurrency test sends, drawn from the serial run."""

ROOT = Path(__file__).resolve().parents[2]
"""The child imports `sandbox` from the checkout under test, whatever the current directory."""
_SERVE = "import sys, sandbox; sandbox.serve(sandbox.Engine(), host='127.0.0.1', port=int(sys.argv[1]))"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_up(process: subprocess.Popen[bytes], base: str, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"{base}/health", timeout=1.0).status_code == 200:
                return True
        except httpx.TransportError:
            time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`sandbox.serve()` in a child process; a port taken between choosing and binding is retried."""
    with tempfile.TemporaryFile() as log:
        for _ in range(3):
            port = _free_port()
            process = subprocess.Popen([sys.executable, "-c", _SERVE, str(port)], stdout=log, stderr=log, cwd=ROOT)
            base = f"http://127.0.0.1:{port}"
            if _wait_until_up(process, base):
                break
            process.kill()
            process.wait()
        else:
            log.seek(0)
            pytest.fail(f"sandbox serve did not start:\n{log.read().decode(errors='replace')[-2000:]}")
        try:
            yield base, process
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - the server exits on SIGTERM
                process.kill()
                process.wait()


def _post(http: httpx.Client, item: Recorded) -> tuple[int, bytes]:
    response = http.post(item.path, content=item.body, headers={"content-type": "application/json"})
    return response.status_code, response.content


def test_threads_and_tasks_on_one_server_get_the_in_process_serial_bytes(
    server: tuple[str, subprocess.Popen[bytes]],
) -> None:
    base, _ = server
    recorded = serial_run()
    threads, tasks = 8, 16  # a body is sent at most 24 times: under the repeat guard's 50 per 10 s
    answers: list[tuple[Recorded, tuple[int, bytes]]] = []
    lock = threading.Lock()
    failures: list[BaseException] = []
    start = threading.Barrier(threads + 1)

    def worker(seed: int) -> None:
        try:
            items = shuffled(recorded, seed)[:SAMPLE]
            with httpx.Client(base_url=base, timeout=30) as http:
                start.wait(timeout=10)
                got = [(item, _post(http, item)) for item in items]
            with lock:
                answers.extend(got)
        except BaseException as exc:  # surfaced below
            failures.append(exc)

    async def tasks_main() -> list[tuple[Recorded, tuple[int, bytes]]]:
        limits = httpx.Limits(max_connections=tasks)
        async with httpx.AsyncClient(base_url=base, timeout=30, limits=limits) as http:

            async def task(seed: int) -> list[tuple[Recorded, tuple[int, bytes]]]:
                got = []
                for item in shuffled(recorded, seed)[:SAMPLE]:
                    response = await http.post(item.path, content=item.body)
                    got.append((item, (response.status_code, response.content)))
                return got

            done = await asyncio.gather(*(task(seed) for seed in range(100, 100 + tasks)))
            return [pair for chunk in done for pair in chunk]

    pool = [threading.Thread(target=worker, args=(seed,)) for seed in range(threads)]
    for thread in pool:
        thread.start()
    start.wait(timeout=10)
    answers_async = asyncio.run(tasks_main())  # runs while the threads run
    for thread in pool:
        thread.join(timeout=60)
    assert not failures, failures
    answers.extend(answers_async)
    assert len(answers) == (threads + tasks) * SAMPLE
    for item, (status, body) in answers:
        assert (status, masked((body,))) == (item.status, masked((item.response,))), item.path


def _burst_request(index: int) -> tuple[str, str, bytes, bool]:
    """(provider, path, body, stream) with distinct bodies (the prompt carries the index), so the
    repeat guard never steps in; every provider, a third of them streamed."""
    provider = sandbox.PROVIDERS[index % len(sandbox.PROVIDERS)]
    stream = index % 3 == 0
    prompt = f"What's the weather in Paris? ({index})"
    body: dict[str, object]
    if provider == "gemini":
        path = f"/v1beta/models/plain_text:{'streamGenerateContent?alt=sse' if stream else 'generateContent'}"
        body = {"contents": [{"role": "user", "parts": [{"text": prompt}]}]}
    elif provider == "openai":
        path = "/v1/chat/completions"
        body = {"model": "plain_text", "messages": [{"role": "user", "content": prompt}], "stream": stream}
    elif provider == "openai-responses":
        path = "/v1/responses"
        body = {"model": "plain_text", "input": prompt, "stream": stream}
    else:
        path = "/v1/messages"
        body = {"model": "plain_text", "max_tokens": 64, "messages": [{"role": "user", "content": prompt}]}
        body["stream"] = stream
    return provider, path, json.dumps(body).encode(), stream


def _text_of(provider: str, body: bytes, stream: bool) -> str:
    """The answer's text, read the way the skyl client reads it (SSE frames through the decoder)."""
    wire = get_wire_format(provider)
    if not stream:
        return wire.decode_response(json.loads(body)).text()
    collector = skyl.StreamCollector()
    decoder = wire.stream_decoder()
    for event in iter_sse([body]):
        for decoded in decoder.feed(event):
            collector.feed(decoded)
    for decoded in decoder.finish():
        collector.feed(decoded)
    return collector.response().text()


def test_a_burst_of_5000_requests_loses_none_and_the_server_stays_up(
    server: tuple[str, subprocess.Popen[bytes]],
) -> None:
    """Plain `http.client` keep-alive connections in threads: a client independent of httpx and cheap
    enough that the burst measures the server, not the load generator."""
    base, process = server
    port = int(base.rsplit(":", 1)[1])
    requests = [_burst_request(index) for index in range(BURST)]
    answers: dict[int, tuple[int, bytes]] = {}
    failures: list[BaseException] = []

    def connection(indexes: range) -> None:
        http = HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            for index in indexes:
                _, path, body, _ = requests[index]
                http.request("POST", path, body=body, headers={"content-type": "application/json"})
                response = http.getresponse()
                answers[index] = (response.status, response.read())
        except BaseException as exc:  # surfaced below
            failures.append(exc)
        finally:
            http.close()

    per = BURST // CONNECTIONS
    pool = [threading.Thread(target=connection, args=(range(start, start + per),)) for start in range(0, BURST, per)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=120)
    assert not failures, failures[:3]
    assert sorted(answers) == list(range(BURST)), "every request got an answer"
    bad = [(index, status, body[:200]) for index, (status, body) in answers.items() if status != 200]
    assert not bad, bad[:5]
    for index, (_, body) in answers.items():
        provider, _, _, stream = requests[index]
        assert _text_of(provider, body, stream) == "Hello! No tools needed for that.", index
    assert process.poll() is None, "the server process exited"
    health = httpx.get(f"{base}/health", timeout=5)
    assert health.status_code == 200 and health.json()["status"] == "ok"
