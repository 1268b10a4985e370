"""Rows of the scaled-out server: `sandbox serve --workers 2` against one worker and aimock (`workers`),
and a simulated lesson site (`site`): 1,000 learners, each running kept-state loops at about one
request a second, through nginx to two `sandbox serve` processes sharing one `redis-server`
(tests/site.py assembles it: the same site the deploy tests run), healthy and with one process
killed halfway. Starts and stops only the processes it measures, on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _table import Row, Settings

WORKER_CLIENTS = (16, 64)
LEARNERS = 1000
THINK = 1.0
"""Seconds a simulated learner waits before each request (its tool's work, its reading): about one
request a second each."""
SITE_OPTIONS = ("--kept", "20000", "--kept-mib", "256")
"""As deploy/ runs it: room for every learner's chain of stored responses (the default, 2,000, would
evict a chain still in use when 1,000 learners each keep four)."""
RETRIES = 2
"""As the official SDKs do: a 5xx or a dropped connection is tried again twice, after 0.5 s and 1 s."""


@contextlib.contextmanager
def _sandbox_serve(workers: int, store: str | None = None) -> Iterator[Any]:
    """`sandbox serve` (the command, with `--workers` over 1 and no `store`: its default shared SQLite file)."""
    import _serve

    port = _serve._free_port()
    command = [sys.executable, "-m", "sandbox", "serve", "--port", str(port), "--workers", str(workers)]
    command += ["--store", store] if store else []
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not _serve._up(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"sandbox serve --workers {workers} did not start")
            time.sleep(0.05)
        for _ in range(workers * 20):  # every worker up: new connections reach each of them
            _serve._up(port)
        yield _serve.Served(port, process.pid)
    finally:
        process.terminate()
        process.wait(30)
        if process.stderr is not None:
            process.stderr.close()


def row_workers(settings: Settings) -> list[Row]:
    """Two worker processes against one, and aimock, at 16 and 64 kept-alive clients, the `serve`
    rows' request pool (plain), cells in rotating order round by round, the best round of each kept."""
    import _serve

    seconds, rounds = (1.0, 1) if settings.quick else (2.0, 3)
    skipped = _serve.aimock_ready()
    kinds = ["one worker", "two workers", "two workers, Redis"] + ([] if skipped else ["aimock"])
    pool = _serve.request_pool(False)
    cells: dict[tuple[str, int], Any] = {}
    with contextlib.ExitStack() as stack:
        from tests.stores import redis_server

        redis = stack.enter_context(redis_server(Path(stack.enter_context(tempfile.TemporaryDirectory()))))
        served = {
            "one worker": stack.enter_context(_sandbox_serve(1)),
            "two workers": stack.enter_context(_sandbox_serve(2)),
            "two workers, Redis": stack.enter_context(_sandbox_serve(2, redis)),
        }
        if not skipped:
            served["aimock"] = stack.enter_context(_serve.server_process("aimock"))
        for kind in kinds:
            _serve.measure(kind, served[kind].port, pool, stream=False, clients=4, seconds=1.0)
        for clients in WORKER_CLIENTS:
            for round_index in range(rounds):
                shift = round_index % len(kinds)
                for kind in kinds[shift:] + kinds[:shift]:
                    cell = _serve.measure(kind, served[kind].port, pool, stream=False, clients=clients, seconds=seconds)
                    best = cells.get((kind, clients))
                    if best is None or cell.rps > best.rps:
                        cells[kind, clients] = cell
    rows = []
    for clients in WORKER_CLIENTS:
        two, one, redis_two = (cells[kind, clients] for kind in ("two workers", "one worker", "two workers, Redis"))
        mock = cells.get(("aimock", clients))
        for subject, store in ((two, "their default SQLite file"), (redis_two, "a redis-server")):
            errors = subject.errors + one.errors
            two_ms = f"{subject.p50_ms:.2f} / {subject.p99_ms:.2f}"
            latency = f"p50 / p99 ms: two {two_ms}, one {one.p50_ms:.2f} / {one.p99_ms:.2f}"
            rows.append(
                Row(
                    f"serve --workers 2 sharing {store}, {clients} clients: req/s against one worker",
                    subject.rps / one.rps,
                    "sandbox serve, one process, its memory store",
                    "information",
                    False if errors else None,
                    f"{subject.rps:.0f} vs {one.rps:.0f} req/s; {latency}" + (f"; {errors} non-200" if errors else ""),
                )
            )
        rows.append(
            Row(
                f"serve --workers 2, {clients} clients: req/s against aimock",
                two.rps / mock.rps if mock else None,
                f"CopilotKit aimock {_serve.AIMOCK.rsplit('@', 1)[1]} (Node), one catch-all fixture, no validation",
                ">= 1x, p99 under 10 ms at 64 clients",
                (two.rps >= mock.rps and (clients != 64 or two.p99_ms < 10)) if mock else None,
                f"{two.rps:.0f} vs {mock.rps:.0f} req/s; p99 {two.p99_ms:.2f} vs {mock.p99_ms:.2f} ms"
                if mock
                else str(skipped),
            )
        )
    return rows


# -- the simulated lesson site ----------------------------------------------------------------------------


@dataclass
class _Tally:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    """Attempts that got no 200: a 5xx, a refusal, or a connection dropped."""
    failed: int = 0
    """Requests that failed after the retries: a learner's loop that stopped."""
    loops: int = 0
    wrong: int = 0
    """Loops whose answer was not the scenario's."""


async def _post(client: Any, body: dict[str, Any], tally: _Tally) -> dict[str, Any] | None:
    import httpx

    for attempt in range(RETRIES + 1):
        if attempt:
            await asyncio.sleep(0.5 * 2 ** (attempt - 1))
        started = time.perf_counter()
        try:
            answer = await client.post("/v1/responses", json=body)
        except httpx.HTTPError:
            tally.errors += 1
            continue
        tally.latencies.append(time.perf_counter() - started)
        if answer.status_code == 200:
            result: dict[str, Any] = answer.json()
            return result
        tally.errors += 1
        if answer.status_code < 500:
            break
    tally.failed += 1
    return None


async def _learner(base: str, number: int, stop_at: float, tally: _Tally, tls: ssl.SSLContext) -> None:
    """One learner: the lesson's loop on `multi_step`, its history kept by the server
    (`previous_response_id`), again and again, a think time before each request."""
    import httpx

    import sandbox

    scenario = sandbox.get_scenario("multi_step")
    tools = [{"type": "function", "name": t.name, "parameters": t.parameters, "strict": False} for t in scenario.tools]
    headers = {"authorization": f"Bearer sk-learner-{number}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30, verify=tls) as client:
        await asyncio.sleep(random.random() * THINK)  # learners arrive spread over the first second
        while time.perf_counter() < stop_at:
            body: dict[str, Any] = {"model": scenario.name, "input": scenario.prompt, "tools": tools}
            while True:
                await asyncio.sleep(THINK * (0.5 + random.random()))
                answer = await _post(client, body, tally)
                if answer is None:
                    break
                calls = [item for item in answer["output"] if item["type"] == "function_call"]
                if not calls:
                    tally.loops += 1
                    tally.wrong += "LB-2041" not in answer["output"][-1]["content"][0]["text"]
                    break
                outputs = [
                    {
                        "type": "function_call_output",
                        "call_id": call["call_id"],
                        "output": scenario.tool_outputs[
                            repr(sandbox.Call(call["name"], dict(_arguments(call["arguments"]))))
                        ],
                    }
                    for call in calls
                ]
                body = {"model": scenario.name, "previous_response_id": answer["id"], "tools": tools, "input": outputs}


def _arguments(text: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(text or "{}")
    return value


async def _crowd(base: str, learners: int, seconds: float, kill: Any) -> tuple[_Tally, float]:
    tally = _Tally()
    started = time.perf_counter()
    stop_at = started + seconds
    tls = ssl.create_default_context()  # unused over http://, but each client would otherwise load its own
    crowd = [asyncio.ensure_future(_learner(base, number, stop_at, tally, tls)) for number in range(learners)]
    if kill is not None:
        await asyncio.sleep(seconds / 2)
        kill()
    await asyncio.gather(*crowd)
    return tally, time.perf_counter() - started


@dataclass
class _Run:
    tally: _Tally
    wall: float
    cpu: dict[str, float]
    """CPU seconds each part of the site used during the crowd: the sandbox processes (healthy runs
    only: a killed one's is gone), nginx, Redis, and this load generator."""


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


def _site_run(learners: int, seconds: float, kill_one: bool) -> _Run:
    """One crowd on a fresh site, and what each of its parts spent."""
    import redis
    from _load import _new_loop, cpu_seconds

    from tests.site import lesson_site

    with tempfile.TemporaryDirectory() as folder, lesson_site(Path(folder), options=SITE_OPTIONS) as site:
        victim = next(iter(site.servers))
        kill = (lambda: site.kill(victim)) if kill_one else None
        with redis.Redis.from_url(site.store) as client:
            redis_pid = int(client.info("server")["process_id"])
        parts = {
            "sandbox": [process.pid for process in site.servers.values()],
            "nginx": [site.proxy_pid, *_children(site.proxy_pid)],
            "redis": [redis_pid],
        }
        before = {name: [cpu_seconds(pid) or 0.0 for pid in pids] for name, pids in parts.items()}
        own = time.process_time()
        loop = _new_loop()
        try:
            tally, wall = loop.run_until_complete(_crowd(site.base, learners, seconds, kill))
        finally:
            loop.close()
        cpu = {"load generator": time.process_time() - own}
        for name, pids in parts.items():
            if not (kill_one and name == "sandbox"):
                cpu[name] = sum(cpu_seconds(pid) or 0.0 for pid in pids) - sum(before[name])
    return _Run(tally, wall, cpu)


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] * 1e3 if ordered else float("nan")


def row_site(settings: Settings) -> list[Row]:
    """1,000 learners for `seconds` on the two-process site, healthy and with one process killed
    halfway, and a tenth of them healthy (where the machine is not the limit): p99 against p99, and
    what each part of the site spends a request."""
    seconds = 20.0 if settings.quick else 40.0
    runs = {
        "few": _site_run(LEARNERS // 10, seconds, kill_one=False),
        "healthy": _site_run(LEARNERS, seconds, kill_one=False),
        "killed": _site_run(LEARNERS, seconds, kill_one=True),
    }
    p99s = {name: _percentile(run.tally.latencies, 0.99) for name, run in runs.items()}
    rows = []
    for name, run in runs.items():
        tally = run.tally
        requests = max(1, len(tally.latencies))
        learners = LEARNERS // 10 if name == "few" else LEARNERS
        what = "one of the two killed halfway" if name == "killed" else "both up"
        baseline = {
            "few": ("itself", "few"),
            "healthy": (f"{LEARNERS // 10} learners, same site (same run)", "few"),
            "killed": (f"{LEARNERS} learners, both up (same run)", "healthy"),
        }[name]
        target = "0 failed loops; errors only the killed one's in flight" if name == "killed" else "0 errors"
        met = tally.failed == 0 and tally.wrong == 0 and (tally.errors == 0 if name != "killed" else True)
        cpu = ", ".join(f"{part} {used / requests * 1e6:.0f}" for part, used in run.cpu.items())
        rows.append(
            Row(
                f"lesson site, {learners} learners for {seconds:.0f} s, {what}: p99 against {baseline[0]}",
                p99s[name] / p99s[baseline[1]],
                baseline[0],
                target,
                met,
                f"{requests / run.wall:.0f} req/s, {tally.loops} loops; "
                f"p50 {_percentile(tally.latencies, 0.5):.1f} ms, p99 {p99s[name]:.1f} ms; "
                f"{tally.errors} attempts without a 200, {tally.failed} requests failed after {RETRIES} retries, "
                f"{tally.wrong} wrong answers; CPU us a request: {cpu}",
            )
        )
    return rows
