"""The load generator of the `sandbox serve` rows: kept-alive clients, one request in flight on each.

A bare asyncio protocol on uvloop (no streams, no task per request): about 20-65 us of its own CPU
a request, under any server's, so the figures measure the server, not the client, and each cell
reports it. Every server is measured the same way (same pool, same client, same placement: left
to the scheduler, as pinning the client and the server to a core each made every server 2-3x
slower at one client on this VM, whose cross-core wake-ups are dear). The server's CPU is read
from each of its threads' schedstat, to the nanosecond. May touch: sockets to 127.0.0.1 and /proc.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Cell", "cpu_seconds", "measure"]


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
