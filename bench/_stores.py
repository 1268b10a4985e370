"""The `stores` rows: a kept-state continuation with each store, against the memory store in the same run.

A `previous_response_id` chain per store (memory, SQLite in a temporary file, Redis on a `redis-server`
this bench starts on a loopback port with no persistence), continued 20 times at depth 10-30 in
alternating turns, one store after another, `ROUNDS` rounds in one process. The time is the wall clock
of one continuation (`engine.handle`), since a shared store's cost is largely a wait for its
transaction or its server, which a CPU clock of the answering thread would not count.
"""

from __future__ import annotations

import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": False}]
ROUNDS = 5
DEPTH = 10
"""Continuations before the 20 timed ones, so each is at depth 10-30."""


@contextmanager
def _redis(folder: Path) -> Iterator[str | None]:
    """A `redis-server` on a free loopback port, keeping nothing on disk; None without one."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    process = subprocess.Popen([*command, "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(500):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.01)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


def _step(answer: dict[str, Any]) -> bytes:
    call = next(item for item in answer["output"] if item["type"] == "function_call")
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "18C"}
    body = {"model": "runaway", "previous_response_id": answer["id"], "tools": TOOLS, "input": [output]}
    return json.dumps(body).encode()


def _answer(engine: Any, body: bytes) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    exchange = engine.handle("POST", "/v1/responses", body)
    elapsed = time.perf_counter() - started
    assert exchange.status == 200, exchange.body[:300]
    answer: dict[str, Any] = json.loads(exchange.body)
    return answer, elapsed


def stores_child() -> None:
    """Prints the median continuation time (ms) per store."""
    import sandbox

    with tempfile.TemporaryDirectory() as folder, _redis(Path(folder)) as redis_url:
        urls = {"memory": "memory", "sqlite": f"sqlite:///{folder}/kept.db"}
        if redis_url is not None:
            urls["redis"] = redis_url
        times: dict[str, list[float]] = {name: [] for name in urls}
        first = json.dumps({"model": "runaway", "input": "Weather?", "tools": TOOLS}).encode()
        for round_ in range(ROUNDS):
            chains = {}
            for name, url in urls.items():
                engine = sandbox.Engine(budget=DEPTH + 40, store=url)
                answer = _answer(engine, first)[0]
                for _ in range(DEPTH):
                    answer = _answer(engine, _step(answer))[0]
                chains[name] = (engine, answer)
            order = list(urls)
            for index in range(20):
                for name in order if (index + round_) % 2 else reversed(order):
                    engine, answer = chains[name]
                    answer, elapsed = _answer(engine, _step(answer))
                    chains[name] = (engine, answer)
                    times[name].append(elapsed)
    print(json.dumps({name: statistics.median(values) * 1000 for name, values in times.items()}))


def stores_rows() -> list[tuple[str, float, str]]:
    """(store, its continuation time / memory's, what was measured) for SQLite and Redis."""
    done = subprocess.run(
        [sys.executable, str(HERE / "_stores.py")], capture_output=True, text=True, check=False, timeout=900
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip()[-400:])
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    memory = figures["memory"]
    return [
        (
            name,
            figures[name] / memory,
            f"{figures[name]:.2f} ms against {memory:.2f} ms (memory) a continuation at depth 10-30 "
            f"(wall clock, median of {ROUNDS} x 20, alternating in one process)",
        )
        for name in ("sqlite", "redis")
        if name in figures
    ]


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    stores_child()
