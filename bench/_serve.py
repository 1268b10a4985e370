"""The `sandbox serve` rows: a server in its own process, a low-overhead load generator in this one.

The load generator is raw asyncio sockets with keep-alive (one connection per simulated client, one
request in flight on each), so on a 2-core machine the server keeps a core to itself and the figures
measure the server, not the client. The baseline is the same uvicorn, same settings, serving an ASGI
app that reads the body and sends back canned bytes of the same size and framing: the ratio is what
the engine and the sandbox's ASGI door add on top of uvicorn's own floor.

Run as a script, this module is the server child: `python bench/_serve.py sandbox|canned PORT [PROFILE]`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
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


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, int]:
    """(status, body size) of one response: Content-Length or chunked framing."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    lower = head.lower()
    at = lower.find(b"\r\ncontent-length:")
    if at >= 0:
        end = lower.index(b"\r\n", at + 2)
        size = int(head[at + 17 : end])
        await reader.readexactly(size)
        return status, size
    total = 0
    while True:
        line = await reader.readuntil(b"\r\n")
        size = int(line.split(b";", 1)[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return status, total
        await reader.readexactly(size + 2)
        total += size


async def _client(
    port: int, requests: Iterator[bytes], warm_until: float, stop_at: float, latencies: list[float]
) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    errors = 0
    try:
        while True:
            started = time.perf_counter()
            if started >= stop_at:
                return errors
            writer.write(next(requests))
            status, _ = await _read_response(reader)
            if started >= warm_until:
                latencies.append(time.perf_counter() - started)
                errors += status != 200
    finally:
        writer.close()
        await writer.wait_closed()


async def _run_cell(
    port: int, pool: list[bytes], clients: int, seconds: float, warmup: float
) -> tuple[list[float], int]:
    requests = itertools.cycle(pool)
    latencies: list[float] = []
    now = time.perf_counter()
    warm_until, stop_at = now + warmup, now + warmup + seconds
    errors = await asyncio.gather(*(_client(port, requests, warm_until, stop_at, latencies) for _ in range(clients)))
    return latencies, sum(errors)


def measure(server: str, port: int, pool: list[bytes], *, stream: bool, clients: int, seconds: float) -> Cell:
    """Requests completed after a short warm-up, within `seconds`; latency from send to last byte."""
    latencies, errors = asyncio.run(_run_cell(port, pool, clients, seconds, warmup=min(0.3, seconds / 3)))
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


@contextmanager
def server_process(kind: str, profile: Path | None = None) -> Iterator[int]:
    """`kind` is `sandbox` (sandbox.serve, the code behind `sandbox serve`) or `canned`."""
    for _ in range(3):
        port = _free_port()
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
        yield port
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


class CannedApp:
    """uvicorn's floor: read the body, answer with bytes prepared at start-up, framed like the sandbox."""

    def __init__(self) -> None:
        import sandbox

        self.health = json.dumps({"status": "ok"}).encode()
        self.answers: dict[tuple[str, bool], tuple[int, dict[str, str], tuple[bytes, ...]]] = {}
        engine = sandbox.Engine(budget=10**6)
        for stream in (False, True):
            for raw in request_pool(stream, size=len(PROVIDERS)):
                head, body = raw.split(b"\r\n\r\n", 1)
                path = head.split(b" ")[1].decode().split("?", 1)[0]
                exchange = engine.handle("POST", path, body)
                self.answers[path, stream] = (exchange.status, dict(exchange.headers), exchange.chunks)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        chunks: tuple[bytes, ...]
        if scope["method"] == "GET":
            status, headers, chunks = 200, {"content-type": "application/json"}, (self.health,)
        else:
            status, headers, chunks = self.answers[scope["path"], b'"stream":true' in body or "stream" in scope["path"]]
        raw_headers = [(name.encode(), value.encode()) for name, value in headers.items()]
        await send({"type": "http.response.start", "status": status, "headers": raw_headers})
        for index, chunk in enumerate(chunks):
            await send({"type": "http.response.body", "body": chunk, "more_body": index < len(chunks) - 1})


def _child(kind: str, port: int, profile: str | None) -> None:
    import sandbox

    def run() -> None:
        if kind == "sandbox":
            sandbox.serve(sandbox.Engine(), host="127.0.0.1", port=port)
        else:
            import uvicorn

            uvicorn.run(CannedApp(), host="127.0.0.1", port=port, log_level="warning", access_log=False)

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
