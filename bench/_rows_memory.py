"""Rows of memory and of what one client can cost the others: RSS over 100k requests (`memory_child`,
run by `bench/run.py --memory-child` in a fresh process a row), the slowest request within the limits
and a small one beside it (`_limits`), and kept state against its bound and the cost of a deep
continuation (`_kept`)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys

from _table import HERE, PROMPT, Row, Settings

import sandbox
from sandbox import skyl

# -- row: memory -------------------------------------------------------------------------------------


def _rss_mb() -> float:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # peak, not current: a fallback


def memory_child(mode: str, total: int) -> None:
    """Runs in a fresh process; prints RSS after 1k requests and after `total`."""
    scenario = sandbox.get_scenario("single_call")
    tools = list(scenario.tools)
    rss: dict[str, float] = {}
    if mode == "engine":
        engine = sandbox.Engine()
        template = json.dumps(
            {
                "model": "single_call",
                "messages": [{"role": "user", "content": "PROMPT"}],
                "tools": [
                    {
                        "type": "function",
                        "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                    }
                    for t in tools
                ],
            }
        )

        def one(index: int) -> None:
            body = template.replace("PROMPT", f"{PROMPT} ({index})").encode()
            assert engine.handle("POST", "/v1/chat/completions", body, client="127.0.0.1").status == 200

    else:
        transport = sandbox.transport()
        client = skyl.Client("openai", transport=transport)

        def one(index: int) -> None:
            client.complete(
                skyl.Request(model="single_call", messages=[skyl.user_text(f"{PROMPT} ({index})")], tools=tools)
            )
            if mode == "transport-cleared" and index % 1000 == 999:
                transport.journal.clear()

    for index in range(total):
        one(index)
        if index + 1 in (1000, total // 2, total):
            gc.collect()
            rss[str(index + 1)] = _rss_mb()
    print(json.dumps(rss))


def row_memory(settings: Settings) -> list[Row]:
    total = 30_000 if settings.quick else 100_000  # the midpoint must be past the guard's 10,000
    rows = []
    modes = {
        "engine": "Engine.handle, distinct bodies (the `sandbox serve` path)",
        "transport-cleared": "skyl.Client over transport(), journal.clear() every 1k",
        "transport": "skyl.Client over one transport(), default journal (newest 1000 kept)",
    }
    for mode, what in modes.items():
        command = [sys.executable, str(HERE / "run.py"), "--memory-child", mode, str(total)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            rows.append(Row(f"memory: {what}", None, "", "flat", False, f"failed: {done.stderr.strip()[-300:]}"))
            continue
        rss = json.loads(done.stdout.strip().splitlines()[-1])
        small, half, big = rss["1000"], rss[str(total // 2)], rss[str(total)]
        per = (big - small) * 1024 / (total - 1000)
        # Flat: no growth once the bounded caches (the repeat guard's 10,000 fingerprints) are full.
        flat = big - half <= 1.0 + 0.01 * half
        rows.append(
            Row(
                f"memory after {total // 1000}k requests: {what}",
                big / small,
                "RSS after 1k requests",
                "flat" if mode != "transport" else "flat",
                flat,
                f"{small:.0f} / {half:.0f} / {big:.0f} MB after 1k / {total // 2000}k / {total // 1000}k "
                f"({per:.2f} KB/request)",
            )
        )
    return rows


# -- rows: what one client can cost the others (issue 14) --------------------------------------------


def row_limits(settings: Settings) -> list[Row]:
    import _limits
    from _serve import server_process

    rows = []
    label, path, body, engine_s, parse_s = _limits.slowest()
    rows.append(
        Row(
            f"slowest request within the 4 MiB limit: Engine.handle ({label}, {len(body) / 2**20:.1f} MiB)",
            engine_s / parse_s,
            "json.loads of the same bytes",
            "< 1 s",
            engine_s < 1.0,
            f"{engine_s * 1e3:.0f} ms vs {parse_s * 1e3:.0f} ms",
        )
    )
    with server_process("sandbox") as served:
        alone, during, count, large = _limits.small_while_large(served.port, path, body)
        rows.append(
            Row(
                "serve: a small request while that request is in flight (worst of the smalls sent meanwhile)",
                during / alone,
                "the same small request alone (median of 20)",
                "< 1 s",
                during < 1.0,
                f"{during * 1e3:.0f} ms vs {alone * 1e3:.1f} ms ({count} smalls during the large one's {large:.2f} s)",
            )
        )
    for provider in sandbox.PROVIDERS:
        size_in, size_out, frames = _limits.stream_ratio(provider)
        rows.append(
            Row(
                f"largest streamed answer ({size_in / 2**20:.1f} MiB result quoted), {provider}: bytes out per byte in",
                size_out / size_in,
                "the request's bytes",
                "<= 6x (Responses repeats the text in 4 done events)",
                size_out <= 6 * size_in,
                f"{size_out / 2**20:.1f} MiB in {frames} frames",
            )
        )
    with server_process("sandbox") as served:
        steps = _limits.connections_held(served.port)
    answered = [held for held, took in steps if took < 1.0]
    most = max(answered, default=0)
    rows.append(
        Row(
            "serve: idle connections held before a small request waits 1 s",
            most / 1024,
            "1,024: the common open-file limit, where the server used to stop",
            ">= 2x",
            most >= 2048,
            ", ".join(f"{held}: {took * 1e3:.0f} ms" for held, took in steps)
            + (" (stopped at the bench's own bound)" if len(answered) == len(steps) else ""),
        )
    )
    total = 120 if settings.quick else 300
    memory = _limits.run_memory(total)
    rss: dict[str, float] = memory["rss"]  # type: ignore[assignment]
    first, half, last = rss["30"], rss[str(total // 2)], rss[str(total)]
    rows.append(
        Row(
            f"memory: one transport after {total} requests quoting a distinct 1 MiB result",
            last / first,
            "RSS after 30 requests",
            "flat (the journal's 64 MiB bound)",
            last - half <= 0.1 * half,
            f"{first:.0f} / {half:.0f} / {last:.0f} MB after 30 / {total // 2} / {total}; journal holds "
            f"{memory['held']}, dropped {memory['dropped']}",
        )
    )
    return rows


# -- rows: kept state (issue 18) ------------------------------------------------------------------


def row_kept(settings: Settings) -> list[Row]:
    import _kept

    memory, measured = _kept.memory_row(settings.quick)
    cost, timed = _kept.chain_row(settings.quick)
    thread, thread_timed = _kept.thread_row(settings.quick)
    turn, turn_timed = _kept.conversation_row(settings.quick)
    return [
        Row("kept state: RSS growth for stored responses past the bound", memory, "the store's bound", "<= 1.5",
            memory <= 1.5, measured),
        Row("kept state: one previous_response_id continuation at depth 500", cost, "the same at depth 10-30",
            "<= 2 (cost of what is new)", cost <= 2, timed),
        Row("kept state: one Anthropic thread continuation at depth 500", thread, "the same at depth 10-30",
            "<= 2 (cost of what is new)", thread <= 2, thread_timed),
        Row("kept state: one Responses conversation turn at depth 500", turn, "the same at depth 10-30",
            "<= 2 (cost of what is new)", turn <= 2, turn_timed),
    ]  # fmt: skip


def row_stores(settings: Settings) -> list[Row]:
    import _stores

    return [
        Row(f"kept state: one previous_response_id continuation, {name} store", ratio, "the same, memory store",
            "reported (a shared store's transaction)", None, measured)
        for name, ratio, measured in _stores.stores_rows()
    ]  # fmt: skip
