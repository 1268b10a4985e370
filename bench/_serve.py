"""The `sandbox serve` rows: a server in its own process, a low-overhead load generator in this one.

The load generator is a bare asyncio protocol on uvloop (one kept-alive connection per simulated
client, one request in flight on each, no streams or tasks per request): about 25-65 us of its own
CPU a request, under any server's, so the figures measure the server, not the client; each cell
reports it. Every server runs the same way (same pool, same client, same placement: left to the
scheduler, as pinning the client and the server to a core each made every server 2-3x slower at
one client on this VM, whose cross-core wake-ups are dear). The server's CPU is read from each of
its threads' schedstat, to the nanosecond. Two baselines, measured in the same run:

- the starlette floor: a minimal starlette app under uvicorn (httptools and uvloop, as `uvicorn`
  picks them when installed) answering with the sandbox's own answers, prepared at start-up: no
  validation, no engine, only the web framework's cost;
- CopilotKit's aimock (Node), installed from npm into bench/.aimock, answering the same requests
  with one catch-all fixture (skipped with one line where node is missing).

A third subject, `protocol`, is `sandbox serve` itself with an engine that answers the same canned
answers (`canned_engine`): what the server costs per request outside the engine, against the floor.

Run as a script, this module is the server child: `python bench/_serve.py sandbox|protocol|starlette PORT [PROFILE]`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PROVIDERS = ("openai", "openai-responses", "anthropic", "gemini")
POOL = 4000
"""Distinct request bodies per mode. The repeat guard allows 50 identical requests per client within
10 s; cycling through this many keeps every body well under that for a whole bench run."""


@dataclass(frozen=True)
class Cell:
    """One bounded run: `clients` connections for `seconds`."""

    server: str
    stream: bool
    clients: int
    requests: int
    seconds: float
    errors: int
    p50_ms: float
    p99_ms: float
    cpu_us: float | None = None
    """The server's CPU microseconds per request (user and system time)."""
    client_us: float = 0.0
    """The load generator's own CPU microseconds per request: a server that costs less than this
    cannot be told apart from the client's limit by its req/s, only by its CPU per request."""

    @property
    def rps(self) -> float:
        return self.requests / self.seconds


def request_pool(stream: bool, size: int = POOL) -> list[bytes]:
    """Raw HTTP/1.1 requests for a 2-round tool loop's second request (history with a call and its
    result, so the replay validation runs), across the four providers, each body distinct."""
    import sandbox
    from sandbox import skyl

    scenario = sandbox.get_scenario("single_call")
    pool: list[bytes] = []
    templates = []
    for provider in PROVIDERS:
        client = skyl.Client(provider, transport=sandbox.transport())
        req = skyl.Request(model=scenario.name, messages=[skyl.user_text("PROMPT")], tools=list(scenario.tools))
        resp = client.complete(req)
        req.messages.append(resp.message)
        req.messages.extend(skyl.tool_result_message(call.id, "18C, clear") for call in resp.tool_calls())
        url, body, _ = client._prepare(req, stream=stream)
        path = url.split("://", 1)[1].split("/", 1)[1]
        templates.append(("/" + path, body))
    for index in range(size):
        path, body = templates[index % len(templates)]
        data = body.replace(b"PROMPT", f"What's the weather in Paris? ({index})".encode())
        head = (
            f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
            f"content-length: {len(data)}\r\n\r\n"
        )
        pool.append(head.encode() + data)
    return pool


class _Client(asyncio.Protocol):
    """One simulated client: a kept-alive connection with one request in flight. A bare protocol
    (no streams, no task per request) so that the load generator's own cost per request stays well
    under any server's, and the figures measure the server."""

    def __init__(self, requests: Iterator[bytes], warm_until: float, stop_at: float, latencies: list[float]) -> None:
        self.requests = requests
        self.warm_until = warm_until
        self.stop_at = stop_at
        self.latencies = latencies
        self.errors = 0
        self.done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None
        self.buffer = b""
        self.started = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self._send()

    def _send(self) -> None:
        assert self.transport is not None
        self.started = time.perf_counter()
        if self.started >= self.stop_at:
            self.transport.close()
            return
        self.transport.write(next(self.requests))

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        status = _whole_response(self.buffer)
        if status is None:
            return
        if self.started >= self.warm_until:
            self.latencies.append(time.perf_counter() - self.started)
            self.errors += status != 200
        self.buffer = b""
        self._send()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(self.errors if self.started >= self.stop_at else self.errors + 1)


def _whole_response(buffer: bytes) -> int | None:
    """The status of the one response `buffer` holds once it is whole (Content-Length or chunked
    framing), else None. One request is in flight per connection, so nothing follows it."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = buffer[:end].lower()
    at = head.find(b"\r\ncontent-length:")
    if at >= 0:
        stop = head.find(b"\r\n", at + 2)
        size = int(head[at + 17 : stop if stop >= 0 else end])
        return int(buffer[9:12]) if len(buffer) >= end + 4 + size else None
    at = end + 4
    while True:
        line = buffer.find(b"\r\n", at)
        if line < 0:
            return None
        size = int(buffer[at:line].split(b";", 1)[0], 16)
        if size == 0:
            return int(buffer[9:12]) if buffer.endswith(b"\r\n\r\n", line) else None
        at = line + 2 + size + 2
        if at > len(buffer):
            return None


async def _client(
    port: int, requests: Iterator[bytes], warm_until: float, stop_at: float, latencies: list[float]
) -> int:
    loop = asyncio.get_running_loop()
    _, client = await loop.create_connection(
        lambda: _Client(requests, warm_until, stop_at, latencies), "127.0.0.1", port
    )
    return await client.done


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop where it is installed: the load generator's cost per request stays small."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def cpu_seconds(pid: int | None) -> float | None:
    """The CPU time (user and system) process `pid` has used, all its threads, where /proc says it
    (to the nanosecond from each thread's schedstat; `stat`'s clock ticks are 10 ms); else None."""
    if pid is None:
        return None
    try:
        total = 0
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as stat:
                total += int(stat.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _run_cell(
    port: int, pool: list[bytes], clients: int, seconds: float, warmup: float, pid: int | None
) -> tuple[list[float], int, float | None, float]:
    requests = itertools.cycle(pool)
    latencies: list[float] = []
    now = time.perf_counter()
    warm_until, stop_at = now + warmup, now + warmup + seconds
    work = asyncio.gather(*(_client(port, requests, warm_until, stop_at, latencies) for _ in range(clients)))
    await asyncio.sleep(warmup)
    started, own = cpu_seconds(pid), time.process_time()
    errors = await work
    ended, own = cpu_seconds(pid), time.process_time() - own
    return latencies, sum(errors), None if started is None or ended is None else ended - started, own


def measure(
    server: str, port: int, pool: list[bytes], *, stream: bool, clients: int, seconds: float, pid: int | None = None
) -> Cell:
    """Requests completed after a short warm-up, within `seconds`; latency from send to last byte;
    the server's CPU time per request (with its `pid`, on Linux): what a loaded machine distorts least."""
    loop = _new_loop()
    try:
        latencies, errors, cpu, own = loop.run_until_complete(
            _run_cell(port, pool, clients, seconds, min(0.3, seconds / 3), pid)
        )
    finally:
        loop.close()
    latencies.sort()
    if not latencies:
        raise RuntimeError(f"{server}: no request completed in {seconds}s")
    return Cell(
        server=server,
        stream=stream,
        clients=clients,
        requests=len(latencies),
        seconds=seconds,
        errors=errors,
        p50_ms=latencies[len(latencies) // 2] * 1e3,
        p99_ms=latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1e3,
        cpu_us=None if cpu is None else cpu / len(latencies) * 1e6,
        client_us=own / len(latencies) * 1e6,
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _up(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
            return sock.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


@dataclass(frozen=True)
class Served:
    port: int
    pid: int


AIMOCK = "@copilotkit/aimock@1.43.0"
"""CopilotKit's mock server (Node), installed by the bench from npm into bench/.aimock (not committed)."""
AIMOCK_DIR = HERE / ".aimock"
_AIMOCK_CLI = AIMOCK_DIR / "node_modules" / "@copilotkit" / "aimock" / "dist" / "cli.js"
_AIMOCK_FIXTURE = {"fixtures": [{"match": {}, "response": {"content": "It is 18C and clear in Paris."}}]}


def aimock_ready() -> str | None:
    """None once aimock is installed (installing it if needed), else the one-line reason it is skipped."""
    if _AIMOCK_CLI.exists():
        return None
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "aimock skipped: node and npm are not installed"
    AIMOCK_DIR.mkdir(exist_ok=True)
    done = subprocess.run(
        ["npm", "install", "--prefix", str(AIMOCK_DIR), "--no-audit", "--no-fund", "--silent", AIMOCK],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0 or not _AIMOCK_CLI.exists():
        return f"aimock skipped: npm install {AIMOCK} failed: {(done.stderr or done.stdout).strip()[-200:]}"
    return None


@contextmanager
def server_process(kind: str, profile: Path | None = None) -> Iterator[Served]:
    """`kind` is `sandbox` (sandbox.serve, the code behind `sandbox serve`), `starlette` (the floor:
    a minimal starlette app under uvicorn serving the same canned answers) or `aimock`."""
    for _ in range(3):
        port = _free_port()
        if kind == "aimock":
            fixture = AIMOCK_DIR / "fixture.json"
            fixture.write_text(json.dumps(_AIMOCK_FIXTURE))
            args = ["node", str(_AIMOCK_CLI), "-p", str(port), "-f", str(fixture), "--log-level", "silent"]
        else:
            args = [sys.executable, str(HERE / "_serve.py"), kind, str(port)] + ([str(profile)] if profile else [])
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and process.poll() is None and not _up(port):
            time.sleep(0.05)
        if process.poll() is None and _up(port):
            break
        process.kill()
        process.wait()
    else:
        raise RuntimeError(f"the {kind} server did not start: {process.stderr.read().decode()[-1000:]}")  # type: ignore[union-attr]
    try:
        yield Served(port, process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


# -- the server child ---------------------------------------------------------------------------------


def canned_answers() -> dict[tuple[str, bool], tuple[int, dict[str, str], tuple[bytes, ...]]]:
    """The sandbox's own answers to the pool's requests (one per path and mode), made at start-up."""
    import sandbox

    answers: dict[tuple[str, bool], tuple[int, dict[str, str], tuple[bytes, ...]]] = {}
    engine = sandbox.Engine(budget=10**6)
    for stream in (False, True):
        for raw in request_pool(stream, size=len(PROVIDERS)):
            head, body = raw.split(b"\r\n\r\n", 1)
            target = head.split(b" ")[1].decode()
            path, _, query = target.partition("?")
            exchange = engine.handle("POST", path, body, query=query)
            answers[path, stream] = (exchange.status, dict(exchange.headers), exchange.chunks)
    return answers


def starlette_app() -> Any:
    """The starlette floor: a minimal starlette app serving the same canned answers (a streamed one
    through `StreamingResponse`, frame by frame, as an SSE endpoint in starlette is written)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    answers = canned_answers()

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def answer(request: Request) -> Response:
        body = await request.body()
        status, headers, chunks = answers[request.url.path, b'"stream":true' in body or "stream" in request.url.path]
        if len(chunks) == 1 and not headers.get("content-type", "").startswith("text/event-stream"):
            return Response(chunks[0], status, headers=headers)

        async def frames() -> Any:
            for chunk in chunks:
                yield chunk

        return StreamingResponse(frames(), status, headers=headers)

    paths = sorted({path for path, _ in answers})
    return Starlette(routes=[Route("/health", health), *(Route(path, answer, methods=["POST"]) for path in paths)])


def canned_engine() -> Any:
    """An engine whose `handle` answers the same canned answers as the floor, and nothing else of it
    changed: `sandbox serve` with it measures the server's own cost per request (protocol, event
    loop, system calls, `Front`), all but the engine's work, through the product's own code path."""
    import sandbox
    from sandbox._exchange import Exchange

    answers = canned_answers()

    class Canned(sandbox.Engine):
        def handle(
            self, method: str, path: str, body: bytes, *, client: str = "", query: str | None = None, **_: Any
        ) -> Exchange:
            status, headers, chunks = answers[path, b'"stream":true' in body or "stream" in path]
            return Exchange(method, path, status, headers, chunks, body)

    return Canned()


def _child(kind: str, port: int, profile: str | None) -> None:
    import sandbox

    def run() -> None:
        if kind in ("sandbox", "protocol"):
            sandbox.serve(sandbox.Engine() if kind == "sandbox" else canned_engine(), host="127.0.0.1", port=port)
        else:  # uvicorn as `uvicorn app:app` runs it: httptools and uvloop when installed
            import uvicorn

            uvicorn.run(starlette_app(), host="127.0.0.1", port=port, log_level="warning", access_log=False)

    if profile is None:
        run()
        return
    import cProfile
    import signal

    # uvicorn re-raises the SIGTERM it caught once it has shut down; a no-op handler lets the
    # profile be written after that instead of the process dying first.
    signal.signal(signal.SIGTERM, lambda *_: None)
    profiler = cProfile.Profile()
    profiler.runcall(run)
    profiler.dump_stats(profile)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    _child(sys.argv[1], int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
