"""The workshop room under load: 100 (then 300) simulated learners posting runs every few seconds.

    python bench/room.py            20 s per phase (about a minute)
    python bench/room.py --quick    6 s per phase (the smoke test)

Three figures, each from one run on this machine:

- the page's update delay: from a learner's post being answered to the first server-sent event
  that carries it (the room's `version`), seen by a page subscribed to the live stream, and the
  bytes of each update after the first (the first carries the whole board), at 100 and 300 learners;
- the server's CPU: the server process's user + system time over the phase, per wall second;
- the sandbox's own request latency with the room on (100 learners posting, one page open, the
  probe's requests attributed to a learner by its API key; then again without a key) against the
  room off (`sandbox serve` alone), as a ratio of medians and of p99s, by the same probe in one run.

Servers run as `python -m sandbox serve [--room]` in a process of their own, the learners and the
page in another, the probe in this one: each phase's probe shares its process with nothing else.
The learners are written into the room's database before it starts (joins from one address are
rate-limited). Everything talks to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from _load import cpu_seconds

from sandbox.room import RoomDatabase
from sandbox.room._service import package_catalogue

ROOT = Path(__file__).resolve().parent.parent
LEARNERS = 100
POST_EVERY = 3.0
"""Seconds between one learner's posts, on average (jittered): `sandbox watch` on a busy learner."""
PROBES = 4
"""Concurrent clients timing the sandbox's own requests."""
CHALLENGES = list(package_catalogue())
BODY = {
    "model": "single_call",
    "messages": [{"role": "user", "content": "What's the weather in Paris?"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
}


@dataclass
class Phase:
    latencies: list[float] = field(default_factory=list)
    delays: list[float] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    """Bytes of each update the page read after the first (the whole board)."""
    posts: int = 0
    cpu: float = 0.0
    wall: float = 0.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cpu_seconds(pid: int) -> float:
    """The server's CPU time (the serve rows' reader, `_load.cpu_seconds`); a row without /proc stops here."""
    seconds = cpu_seconds(pid)
    if seconds is None:
        raise OSError(f"no CPU time for process {pid} in /proc: the room rows need Linux")
    return seconds


def _seat(db: Path, learners: int) -> None:
    """`learners` learners in the room's database: `learner NNN`, token `rt-bench-N`, key `sk-room-bench-N`."""
    store = RoomDatabase(db)
    now = time.time()
    for number in range(learners):
        store.add_learner(f"learner {number:03}", f"rt-bench-{number}", f"sk-room-bench-{number}", now, now + 86400)
    store.close()


@contextmanager
def _server(room: bool, db: Path, learners: int = LEARNERS) -> Iterator[tuple[int, int, str | None]]:
    """(port, pid, instructor key) of a fresh `sandbox serve [--room]` process."""
    if room:
        _seat(db, learners)
    port = _free_port()
    command = [sys.executable, "-m", "sandbox", "serve", "--port", str(port)]
    if room:
        command += ["--room", "--room-db", str(db)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    key = None
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if "key=" in line:
                key = line.rsplit("key=", 1)[1].strip()
            if (not room and "Serving the sandbox" in line) or "Their own loops" in line:
                break
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
        yield port, process.pid, key
    finally:
        process.terminate()
        process.communicate(timeout=30)


async def _probe(client: httpx.AsyncClient, base: str, headers: dict[str, str], until: float, phase: Phase) -> None:
    """The sandbox's own traffic: a loop's two requests, again and again, each timed."""
    while time.monotonic() < until:
        body = json.loads(json.dumps(BODY))
        body["messages"][0]["content"] += f" ({random.random()})"  # distinct bodies: no repeat guard
        started = time.perf_counter()
        first = await client.post(f"{base}/v1/chat/completions", json=body, headers=headers)
        phase.latencies.append(time.perf_counter() - started)
        turn = first.json()["choices"][0]["message"]
        body["messages"] += [turn, {"role": "tool", "tool_call_id": turn["tool_calls"][0]["id"], "content": "18C"}]
        started = time.perf_counter()
        await client.post(f"{base}/v1/chat/completions", json=body, headers=headers)
        phase.latencies.append(time.perf_counter() - started)


def _run(number: int) -> dict[str, object]:
    done = number % len(CHALLENGES)
    challenges = {name: {"passed": 4, "failed": 0, "not_started": 0} for name in CHALLENGES[:done]}
    challenge = CHALLENGES[done]
    challenges[challenge] = {"passed": 2, "failed": 2, "not_started": 0}
    rule = "Append resp.message itself, once per turn; never a reconstruction."
    failures = [
        {"challenge": challenge, "test": f"test_case[{index}-openai]", "rule": rule, "headline": "complete() broke it"}
        for index in range(2)
    ]
    failures[0]["text"] = "The conversation as sent in request 2:\n" + '    0  user  "What\'s the weather?"\n' * 20
    return {"source": "pytest", "challenges": challenges, "failures": failures}


async def _learner(
    client: httpx.AsyncClient, room: str, token: str, until: float, posted: dict[int, float], phase: Phase
) -> None:
    await asyncio.sleep(random.uniform(0, POST_EVERY))
    number = 0
    while time.monotonic() < until:
        response = await client.post(
            f"{room}/api/runs", json=_run(number), headers={"authorization": f"Bearer {token}"}
        )
        if response.status_code == 202:
            posted.setdefault(int(response.json()["version"]), time.perf_counter())
            phase.posts += 1
        number += 1
        await asyncio.sleep(random.uniform(0.5, 1.5) * POST_EVERY)


async def _page(room: str, key: str, until: float, posted: dict[int, float], phase: Phase) -> None:
    """An instructor's page: reads the live stream, and times each post until an event carries it."""
    seen = 0
    first = True
    async with httpx.AsyncClient(timeout=None) as client:
        while time.monotonic() < until:
            async with client.stream("GET", f"{room}/api/events", params={"key": key}) as stream:
                async for line in stream.aiter_lines():
                    if not line.startswith("data: "):
                        continue
                    arrived = time.perf_counter()
                    if not first:
                        phase.sizes.append(len(line.encode()))
                    first = False
                    version = int(json.loads(line[6:])["version"])
                    for number in [number for number in posted if seen < number <= version]:
                        phase.delays.append(arrived - posted.pop(number))
                    seen = max(seen, version)
                    if time.monotonic() >= until:
                        return


async def _crowd(port: int, key: str, seconds: float, learners: int) -> None:
    """The child process: the seated learners and a page for `seconds`; prints the probe's API key
    first, then the figures as one JSON line."""
    room = f"http://127.0.0.1:{port}/room"
    phase = Phase()
    posted: dict[int, float] = {}
    limits = httpx.Limits(max_connections=learners + 10)
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:
        print("sk-room-bench-0", flush=True)
        until = time.monotonic() + seconds
        tasks = [_learner(client, room, f"rt-bench-{n}", until, posted, phase) for n in range(learners)]
        await asyncio.gather(*tasks, _page(room, key, until, posted, phase))
    print(json.dumps({"delays": phase.delays, "posts": phase.posts, "sizes": phase.sizes}), flush=True)


async def _probes(base: str, headers: dict[str, str], seconds: float, phase: Phase) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        warm = Phase()
        await asyncio.gather(*(_probe(client, base, headers, time.monotonic() + 1.0, warm) for _ in range(PROBES)))
        until = time.monotonic() + seconds
        await asyncio.gather(*(_probe(client, base, headers, until, phase) for _ in range(PROBES)))


def _measure(room: bool, seconds: float, *, attributed: bool = True, learners: int = LEARNERS) -> Phase:
    """One phase: the server (with the room, its learners and a page, or alone), timed by the probe."""
    phase = Phase()
    with tempfile.TemporaryDirectory(prefix="bench-room-") as scratch:
        with _server(room, Path(scratch) / "room.db", learners) as (port, pid, key):
            crowd = None
            headers: dict[str, str] = {}
            if room:
                command = [sys.executable, __file__, "--crowd", f"{port},{key},{seconds + 2},{learners}"]
                crowd = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
                assert crowd.stdout is not None
                api_key = crowd.stdout.readline().strip()
                if attributed:  # the probe is a learner's own loop: recorded as their conversations
                    headers = {"authorization": f"Bearer {api_key}"}
                time.sleep(1.0)  # the learners' first posts are under way
            started, cpu = time.monotonic(), _cpu_seconds(pid)
            asyncio.run(_probes(f"http://127.0.0.1:{port}", headers, seconds, phase))
            phase.wall, phase.cpu = time.monotonic() - started, _cpu_seconds(pid) - cpu
            if crowd is not None:
                out, _ = crowd.communicate(timeout=120)
                figures = json.loads(out.strip().splitlines()[-1])
                phase.delays, phase.posts, phase.sizes = figures["delays"], figures["posts"], figures["sizes"]
    return phase


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _update_row(phase: Phase, learners: int) -> tuple[str, str, str]:
    ms = 1000.0
    sizes = phase.sizes or [0]
    return (
        f"page update at {learners} learners: delay p50 / p99; bytes per update mean / p99",
        f"{_p(phase.delays, 0.5) * ms:.0f} / {_p(phase.delays, 0.99) * ms:.0f} ms; "
        f"{sum(sizes) / len(sizes) / 1000:.1f} / {_p([float(size) for size in sizes], 0.99) / 1000:.1f} kB",
        f"{len(phase.sizes)} updates after the first, {phase.posts} posts",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="6 s per phase instead of 20 (the smoke test)")
    parser.add_argument("--crowd", default=None, help=argparse.SUPPRESS)  # PORT,KEY,SECONDS: the child's job
    args = parser.parse_args(argv)
    if args.crowd:
        port, key, seconds_text, learners = args.crowd.split(",")
        asyncio.run(_crowd(int(port), key, float(seconds_text), int(learners)))
        return 0
    seconds = 6.0 if args.quick else 20.0
    load = os.getloadavg()
    off = _measure(False, seconds)
    on = _measure(True, seconds)
    anonymous = _measure(True, seconds, attributed=False)
    crowded = _measure(True, seconds, learners=300)
    ms = 1000.0
    off50, off99, on50, on99 = (_p(values, q) * ms for values in (off.latencies, on.latencies) for q in (0.5, 0.99))
    delay50, delay99 = _p(on.delays, 0.5) * ms, _p(on.delays, 0.99) * ms
    rows = [
        ("sandbox latency, room off: p50 / p99", f"{off50:.1f} / {off99:.1f} ms", f"{len(off.latencies)} requests"),
        ("sandbox latency, room on: p50 / p99", f"{on50:.1f} / {on99:.1f} ms", f"{len(on.latencies)} requests"),
        ("ratio room on / off: p50 / p99", f"{on50 / off50:.2f}x / {on99 / off99:.2f}x", "same probe, same run"),
        (
            "ratio room on, probe without a key / off: p50 / p99",
            f"{_p(anonymous.latencies, 0.5) * ms / off50:.2f}x / {_p(anonymous.latencies, 0.99) * ms / off99:.2f}x",
            "not attributed: the ASGI path alone",
        ),
        (
            "page update delay: p50 / p99 / max",
            f"{delay50:.0f} / {delay99:.0f} / {max(on.delays, default=float('nan')) * ms:.0f} ms",
            f"{len(on.delays)} of {on.posts} posts timed",
        ),
        *(_update_row(phase, learners) for phase, learners in ((on, LEARNERS), (crowded, 300))),
        (
            "server CPU, room off / on",
            f"{off.cpu / off.wall * 100:.0f}% / {on.cpu / on.wall * 100:.0f}% of a core",
            f"{LEARNERS} learners, a post every ~{POST_EVERY:g} s each, one page open",
        ),
    ]
    where = f"{'--quick, ' if args.quick else ''}{seconds:g} s per phase"
    before = f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}"
    print(f"Room bench ({where}); load average before: {before}; {os.cpu_count()} CPUs")
    print("| Row | Figure | Notes |\n|---|---|---|")
    for row in rows:
        print(f"| {' | '.join(row)} |")
    if not on.delays or not off.latencies or not on.latencies:
        print("bench/room.py: a phase measured nothing", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
