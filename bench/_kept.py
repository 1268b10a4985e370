"""The `kept` rows: state the sandbox keeps for its clients (issue 18).

- memory: 600 stored Responses of 4,000 short messages each, the RSS the process grows by against
  the store's bound (64 MiB): the bound is real memory, not a count of JSON never kept (the store
  once held parsed objects: +575 MB);
- continuation cost: a `previous_response_id` chain, the time of one continuation at depth 500
  against depth 10-30 (what a continuation costs in proportion to the chain); the same for an
  Anthropic message thread (`thread: continue`) and for a Responses `conversation`.

Each runs in a fresh process, in process (no sockets). A continuation's time is the CPU time of the
thread that answers it (`time.thread_time`), not the wall clock: on a shared machine the wall clock
also counts the time other processes held the core, which swung the ratios from 0.5x to 2.9x
between runs a minute apart.
"""

from __future__ import annotations

import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": False}]
Step = Callable[[dict[str, Any]], dict[str, Any]]


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise OSError("no VmRSS in /proc/self/status")


def memory_child(responses: int, messages: int, bound_mib: float) -> None:
    """Prints RSS before and after storing `responses` responses of `messages` messages each."""
    import sandbox

    engine = sandbox.Engine(kept_mib=bound_mib)
    warm = json.dumps({"model": "plain_text", "input": "warm up"}).encode()
    engine.handle("POST", "/v1/responses", warm)
    gc.collect()
    before = _rss_mb()
    for index in range(responses):
        items = [{"role": "user", "content": f"m{index}.{n}"} for n in range(messages)]
        body = json.dumps({"model": "plain_text", "input": items}).encode()
        assert engine.handle("POST", "/v1/responses", body).status == 200
    gc.collect()
    after = _rss_mb()
    store = engine.kept.store
    print(json.dumps({"before": before, "after": after, "held": store.held, "bound": store.max_bytes,
                      "kept": len(store), "evicted": store.evictions}))  # fmt: skip


CHAINS = 5
"""Rounds per figure, each with a fresh engine per chain."""
SHORT, LONG = 30, 500
"""The depths compared: the last 20 continuations of a chain this long."""


def _paired_ms(start: Callable[[Any], tuple[str, dict[str, Any]]], step: Step) -> tuple[float, float]:
    """The median times of continuations at depth 10-30 and at depth 480-500, measured in one process
    in alternating steps (a short chain's, a long chain's), `CHAINS` rounds: processes started a
    minute apart ran the same continuation at 0.13 and at 0.27 ms, so timing the two depths in two
    processes measured the processes as much as the depth. `start(engine)` gives the path and the
    first answer, `step(answer)` the next continuation's body."""
    import sandbox

    times: dict[int, list[float]] = {SHORT: [], LONG: []}
    for round_ in range(CHAINS):
        chains = {}
        for depth in (SHORT, LONG):
            engine = sandbox.Engine(budget=depth + 10)
            path, answer = start(engine)
            for _ in range(depth - 20):
                answer = _answer(engine, path, step(answer))[0]
            chains[depth] = (engine, path, answer)
        for index in range(20):
            for depth in (SHORT, LONG) if (index + round_) % 2 else (LONG, SHORT):
                engine, path, answer = chains[depth]
                answer, elapsed = _answer(engine, path, step(answer))
                chains[depth] = (engine, path, answer)
                times[depth].append(elapsed)
    return statistics.median(times[SHORT]) * 1000, statistics.median(times[LONG]) * 1000


def _answer(engine: Any, path: str, request: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """The answer to `request` and the CPU time the answering thread spent on it."""
    body = json.dumps(request).encode()
    started = time.thread_time()
    exchange = engine.handle("POST", path, body)
    elapsed = time.thread_time() - started
    assert exchange.status == 200, exchange.body[:300]
    answer: dict[str, Any] = json.loads(exchange.body)
    return answer, elapsed


def _output(answer: dict[str, Any]) -> dict[str, Any]:
    call = next(item for item in answer["output"] if item["type"] == "function_call")
    return {"type": "function_call_output", "call_id": call["call_id"], "output": "18C"}


def _create(engine: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(engine.handle("POST", path, json.dumps(body).encode()).body)
    return answer


def chain_child() -> None:
    """Prints the median times of a `previous_response_id` continuation at depth 10-30 and 480-500."""

    def start(engine: Any) -> tuple[str, dict[str, Any]]:
        return "/v1/responses", _create(
            engine, "/v1/responses", {"model": "runaway", "input": "Weather?", "tools": TOOLS}
        )

    def step(answer: dict[str, Any]) -> dict[str, Any]:
        return {"model": "runaway", "previous_response_id": answer["id"], "tools": TOOLS, "input": [_output(answer)]}

    short, long = _paired_ms(start, step)
    print(json.dumps({"short_ms": short, "long_ms": long}))


def thread_child() -> None:
    """Prints the median times of an Anthropic thread continuation at depth 10-30 and 480-500."""
    tools = [{"name": "get_weather", "input_schema": {"type": "object"}}]

    def start(engine: Any) -> tuple[str, dict[str, Any]]:
        messages = [{"role": "user", "content": "Weather?"}]
        body = {
            "model": "runaway",
            "max_tokens": 64,
            "tools": tools,
            "messages": messages,
            "thread": {"type": "create"},
        }
        return "/v1/messages", _create(engine, "/v1/messages", body)

    def step(answer: dict[str, Any]) -> dict[str, Any]:
        call = next(block for block in answer["content"] if block["type"] == "tool_use")
        result = {"type": "tool_result", "tool_use_id": call["id"], "content": "18C"}
        thread = {"type": "continue", "previous_message_id": answer["id"]}
        return {
            "model": "runaway",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": [result]}],
            "thread": thread,
        }

    short, long = _paired_ms(start, step)
    print(json.dumps({"short_ms": short, "long_ms": long}))


def conversation_child() -> None:
    """Prints the median times of a turn of a Responses `conversation` at depth 10-30 and 480-500."""
    turn: dict[str, Any] = {"model": "runaway", "tools": TOOLS}

    def start(engine: Any) -> tuple[str, dict[str, Any]]:
        turn["conversation"] = _create(engine, "/v1/conversations", {})["id"]
        return "/v1/responses", _create(engine, "/v1/responses", {**turn, "input": "Weather?"})

    def step(answer: dict[str, Any]) -> dict[str, Any]:
        return {**turn, "input": [_output(answer)]}

    short, long = _paired_ms(start, step)
    print(json.dumps({"short_ms": short, "long_ms": long}))


def _child(*args: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, str(HERE / "_kept.py"), *args], capture_output=True, text=True, check=False, timeout=900
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip()[-400:])
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _paired_row(kind: str) -> tuple[float, str]:
    figures = _child(kind)
    short, long = figures["short_ms"], figures["long_ms"]
    return long / short, (
        f"{short:.2f} ms at depth 10-30, {long:.2f} ms at depth 480-500 (CPU time, median of {CHAINS} x 20, "
        "alternating in one process)"
    )


def memory_row(quick: bool) -> tuple[float, str]:
    """(RSS growth / bound, what was measured)."""
    responses, bound = (150, 16) if quick else (600, 64)  # quick: the same fill, a quarter of the size
    figures = _child("memory", str(responses), "4000", str(bound))
    growth = figures["after"] - figures["before"]
    bound_mb = figures["bound"] / (1024 * 1024)
    return growth / bound_mb, (
        f"RSS +{growth:.0f} MB for {responses} responses of 4,000 messages; the store holds "
        f"{figures['held'] / 1048576:.0f} MiB of its {bound_mb:.0f} MiB bound ({figures['kept']:.0f} kept, "
        f"{figures['evicted']:.0f} evicted)"
    )


def chain_row(quick: bool) -> tuple[float, str]:
    """(continuation time at depth 500 / at depth 10-30, what was measured)."""
    return _paired_row("chain")


def thread_row(quick: bool) -> tuple[float, str]:
    """(thread continuation time at depth 500 / at depth 10-30, what was measured)."""
    return _paired_row("thread")


def conversation_row(quick: bool) -> tuple[float, str]:
    """(conversation turn time at depth 500 / at depth 10-30, what was measured)."""
    return _paired_row("conversation")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    if sys.argv[1] == "memory":
        memory_child(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
    elif sys.argv[1] == "thread":
        thread_child()
    elif sys.argv[1] == "conversation":
        conversation_child()
    else:
        chain_child()
