"""Rows of `sandbox serve` in its own process: req/s, server CPU and latency against the starlette floor
and aimock at 1, 16 and 64 clients, plain and streamed (`_serve`, `_load`), and memory while readers
never read (`_stalls`). Starts and stops only the servers it measures, on 127.0.0.1."""

from __future__ import annotations

import contextlib
import io
import pstats
import sys
import tempfile
from pathlib import Path

from _table import Row, Settings, trim_profile

SERVE_CLIENTS = (1, 16, 64)


def row_serve(settings: Settings) -> list[Row]:
    """The sandbox, the starlette floor and aimock side by side, and `sandbox serve` with a canned
    engine (`protocol`: the server's own cost, outside the engine); cells rotate between them round
    by round, and each keeps its best round, so the machine's noise hits all of them alike. The
    figures are information, with no target: only a non-200 answer misses."""
    import _serve

    seconds, rounds = (0.8, 1) if settings.quick else (1.2, 3)
    skipped = _serve.aimock_ready()
    if skipped:
        print(skipped, file=sys.stderr, flush=True)
    kinds = ["sandbox", "starlette", "protocol"] + ([] if skipped else ["aimock"])
    cells: dict[tuple[str, bool, int], _serve.Cell] = {}
    cpus: dict[tuple[str, bool, int], float] = {}
    for stream in (False, True):
        pool = _serve.request_pool(stream)
        with contextlib.ExitStack() as stack:
            served = {kind: stack.enter_context(_serve.server_process(kind)) for kind in kinds}
            for kind in kinds:  # first requests pay for imports and caches: not measured
                _serve.measure(kind, served[kind].port, pool, stream=stream, clients=4, seconds=1.0)
            for clients in SERVE_CLIENTS:
                for round_index in range(rounds):
                    shift = round_index % len(kinds)
                    for kind in kinds[shift:] + kinds[:shift]:
                        port, pid = served[kind].port, served[kind].pid
                        cell = _serve.measure(
                            kind, port, pool, stream=stream, clients=clients, seconds=seconds, pid=pid
                        )
                        best = cells.get((kind, stream, clients))
                        if best is None or cell.rps > best.rps:
                            cells[kind, stream, clients] = cell
                        cpu = cpus.get((kind, stream, clients))
                        if cell.cpu_us is not None and (cpu is None or cell.cpu_us < cpu):
                            cpus[kind, stream, clients] = cell.cpu_us
    rows = []
    for stream in (False, True):
        mode = "streamed" if stream else "plain"

        def profile(stream: bool = stream) -> str:
            return profile_server(stream, seconds)

        def profile_protocol(stream: bool = stream) -> str:
            return profile_server(stream, seconds, "protocol")

        for clients in SERVE_CLIENTS:
            subject, floor = cells["sandbox", stream, clients], cells["starlette", stream, clients]
            errors = f", {subject.errors} non-200" if subject.errors else ""
            name = f"serve {mode}, {clients} client{'s' if clients > 1 else ''}"
            rows.append(
                Row(
                    f"{name}: req/s against the starlette floor",
                    subject.rps / floor.rps,
                    "minimal starlette app, same canned answers",
                    "information",
                    None if not subject.errors else False,
                    f"{subject.rps:.0f} vs {floor.rps:.0f} req/s ({subject.requests} requests{errors})",
                    profile,
                )
            )
            mock = cells.get(("aimock", stream, clients))
            rows.append(
                Row(
                    f"{name}: req/s against aimock",
                    subject.rps / mock.rps if mock else None,
                    f"CopilotKit aimock {_serve.AIMOCK.rsplit('@', 1)[1]} (Node), one catch-all fixture",
                    "information",
                    None,
                    f"{subject.rps:.0f} vs {mock.rps:.0f} req/s" if mock else str(skipped),
                    profile,
                )
            )
            cpu, floor_cpu, mock_cpu = (
                cpus.get((kind, stream, clients)) for kind in ("sandbox", "starlette", "aimock")
            )
            if cpu is not None and floor_cpu is not None:
                versus = f", aimock {mock_cpu:.0f} us" if mock_cpu is not None else ""
                rows.append(
                    Row(
                        f"{name}: server CPU per request against the starlette floor",
                        cpu / floor_cpu,
                        "minimal starlette app, same canned answers (best round each)",
                        "information",
                        None,
                        f"sandbox {cpu:.0f} us vs starlette {floor_cpu:.0f} us{versus}",
                        profile,
                    )
                )
            protocol = cpus.get(("protocol", stream, clients))
            if protocol is not None and floor_cpu is not None:
                rows.append(
                    Row(
                        f"{name}: the server outside the engine, CPU per request against the starlette floor",
                        protocol / floor_cpu,
                        "minimal starlette app's whole request, same canned answers (best round each)",
                        "information",
                        None,
                        f"sandbox serve with a canned engine {protocol:.0f} us "
                        f"({cells['protocol', stream, clients].rps:.0f} req/s) vs starlette {floor_cpu:.0f} us; "
                        f"load generator {cells['protocol', stream, clients].client_us:.0f} us",
                        profile_protocol,
                    )
                )
            others = "".join(
                f", {kind} {cells[kind, stream, clients].p50_ms:.2f} / {cells[kind, stream, clients].p99_ms:.2f}"
                for kind in kinds[1:]
            )
            rows.append(
                Row(
                    f"{name}: p50 / p99 latency",
                    subject.p99_ms / floor.p99_ms,
                    "starlette floor, p99 against p99",
                    "information",
                    None,
                    f"ms: sandbox {subject.p50_ms:.2f} / {subject.p99_ms:.2f}{others}",
                    profile,
                )
            )
    return rows


def row_stalls(settings: Settings) -> list[Row]:
    """RSS of `sandbox serve` while readers that never read hold big streamed answers, and after its
    write timeout dropped them (what glibc keeps for reuse stays in the process)."""
    import _stalls
    from _serve import server_process

    count = 10 if settings.quick else 20
    with server_process("sandbox") as served:
        before, held, after, cut = _stalls.stalled_readers(served.port, served.pid, count)
    return [
        Row(
            f"serve: RSS with {count} readers that never read a ~20 MB streamed answer",
            after / before,
            "RSS before they came",
            "every answer dropped once the 5 s write timeout passes (RSS: information)",
            cut == count,
            f"{before:.0f} MB before, {held:.0f} MB while held, {after:.0f} MB after; {cut} of {count} dropped",
        )
    ]


def profile_server(stream: bool, seconds: float, kind: str = "sandbox") -> str:
    """Where the server's time goes at 64 clients: the server child (`sandbox`, or `protocol`: with a
    canned engine) under cProfile."""
    import _serve

    pool = _serve.request_pool(stream)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "server.prof"
        with _serve.server_process(kind, profile=out) as served:
            _serve.measure(kind, served.port, pool, stream=stream, clients=64, seconds=seconds)
        text = io.StringIO()
        pstats.Stats(str(out), stream=text).sort_stats("tottime").print_stats(22)
    return trim_profile(text.getvalue())
