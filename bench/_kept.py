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
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": False}]


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


def chain_child(depth: int) -> None:
    """Prints the median time of the last 20 continuations of a chain `depth` long."""
    import sandbox

    engine = sandbox.Engine(budget=depth + 10)
    create = json.dumps({"model": "runaway", "input": "Weather?", "tools": TOOLS}).encode()
    answer = json.loads(engine.handle("POST", "/v1/responses", create).body)
    times = []
    for _ in range(depth):
        call = next(item for item in answer["output"] if item["type"] == "function_call")
        output = {"type": "function_call_output", "call_id": call["call_id"], "output": "18C"}
        body = json.dumps(
            {"model": "runaway", "previous_response_id": answer["id"], "tools": TOOLS, "input": [output]}
        ).encode()
        started = time.thread_time()
        exchange = engine.handle("POST", "/v1/responses", body)
        times.append(time.thread_time() - started)
        assert exchange.status == 200, exchange.body[:300]
        answer = json.loads(exchange.body)
    print(json.dumps({"median_ms": statistics.median(times[-20:]) * 1000}))


def thread_child(depth: int) -> None:
    """Prints the median time of the last 20 continuations of an Anthropic thread `depth` turns long."""
    import sandbox

    engine = sandbox.Engine(budget=depth + 10)
    tools = [{"name": "get_weather", "input_schema": {"type": "object"}}]
    body = {"model": "runaway", "max_tokens": 64, "tools": tools, "messages": [{"role": "user", "content": "Weather?"}]}
    create = json.dumps({**body, "thread": {"type": "create"}}).encode()
    answer = json.loads(engine.handle("POST", "/v1/messages", create).body)
    times = []
    for _ in range(depth):
        call = next(block for block in answer["content"] if block["type"] == "tool_use")
        result = {"type": "tool_result", "tool_use_id": call["id"], "content": "18C"}
        thread = {"type": "continue", "previous_message_id": answer["id"]}
        messages = [{"role": "user", "content": [result]}]
        request = {"model": "runaway", "max_tokens": 64, "messages": messages, "thread": thread}
        started = time.thread_time()
        exchange = engine.handle("POST", "/v1/messages", json.dumps(request).encode())
        times.append(time.thread_time() - started)
        assert exchange.status == 200, exchange.body[:300]
        answer = json.loads(exchange.body)
    print(json.dumps({"median_ms": statistics.median(times[-20:]) * 1000}))


def conversation_child(depth: int) -> None:
    """Prints the median time of the last 20 turns of a Responses `conversation` `depth` turns long."""
    import sandbox

    engine = sandbox.Engine(budget=depth + 10)
    created = json.loads(engine.handle("POST", "/v1/conversations", b"{}").body)
    turn = {"model": "runaway", "conversation": created["id"], "tools": TOOLS}
    answer = json.loads(engine.handle("POST", "/v1/responses", json.dumps({**turn, "input": "Weather?"}).encode()).body)
    times = []
    for _ in range(depth):
        call = next(item for item in answer["output"] if item["type"] == "function_call")
        output = {"type": "function_call_output", "call_id": call["call_id"], "output": "18C"}
        body = json.dumps({**turn, "input": [output]}).encode()
        started = time.thread_time()
        exchange = engine.handle("POST", "/v1/responses", body)
        times.append(time.thread_time() - started)
        assert exchange.status == 200, exchange.body[:300]
        answer = json.loads(exchange.body)
    print(json.dumps({"median_ms": statistics.median(times[-20:]) * 1000}))


def _child(*args: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, str(HERE / "_kept.py"), *args], capture_output=True, text=True, check=False, timeout=900
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip()[-400:])
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


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
    """(continuation time at depth 500 / at depth 10, what was measured)."""
    short = _child("chain", "30")["median_ms"]
    long = _child("chain", "500")["median_ms"]
    return long / short, f"{short:.2f} ms at depth 10-30, {long:.1f} ms at depth 480-500 (median of 20)"


def thread_row(quick: bool) -> tuple[float, str]:
    """(thread continuation time at depth 500 / at depth 10-30, what was measured)."""
    short = _child("thread", "30")["median_ms"]
    long = _child("thread", "500")["median_ms"]
    return long / short, f"{short:.2f} ms at depth 10-30, {long:.1f} ms at depth 480-500 (median of 20)"


def conversation_row(quick: bool) -> tuple[float, str]:
    """(conversation turn time at depth 500 / at depth 10-30, what was measured)."""
    short = _child("conversation", "30")["median_ms"]
    long = _child("conversation", "500")["median_ms"]
    return long / short, f"{short:.2f} ms at depth 10-30, {long:.1f} ms at depth 480-500 (median of 20)"


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    if sys.argv[1] == "memory":
        memory_child(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
    elif sys.argv[1] == "thread":
        thread_child(int(sys.argv[2]))
    elif sys.argv[1] == "conversation":
        conversation_child(int(sys.argv[2]))
    else:
        chain_child(int(sys.argv[2]))
