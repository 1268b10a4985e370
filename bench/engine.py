"""The engine's CPU per request on the serve rows' pool, without the server: what an engine change
moves, measured in seconds rather than the serve rows' minutes.

    python bench/engine.py                    plain: the pool's average, then each provider alone
    python bench/engine.py --stream           the same pool, streamed
    python bench/engine.py --profile          then cProfile of 4,000 requests (cumulative, then own time)
    python bench/engine.py --instructions     instructions a request, by callgrind (needs valgrind)

Each figure is the best of three rounds on a fresh engine (400 requests of warm-up, then 2,000 of the
pool or 1,000 of one provider), in CPU time of this process. For an A/B, run it from two checkouts in
turn, several times, each with its own venv, and read bests and ratios: the machine may be shared.
`Engine.handle` is called as the server calls it: path and query apart, a `content-type` header, 64
senders in turn (the repeat guard's keys).

`--instructions` counts instead of timing: this script again under `valgrind --tool=callgrind`, the
count collected only inside `sys.call_tracing` (which wraps 400 requests after 400 of warm-up), with
`PYTHONHASHSEED=0`. The figure is the same on a busy machine as on an idle one, so an A/B of an engine
change needs one run of each side (about 20 s each); `--path` narrows it to one provider.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _serve import request_pool  # noqa: E402

from sandbox import Engine  # noqa: E402

Request = tuple[str, "str | None", bytes]
HEADERS = {"content-type": "application/json"}


def requests(stream: bool) -> list[Request]:
    """The pool's raw HTTP requests as (path, query, body)."""
    out: list[Request] = []
    for raw in request_pool(stream, 400):
        head, body = raw.split(b"\r\n\r\n", 1)
        path, _, query = head.split(b" ")[1].decode().partition("?")
        out.append((path, query or None, body))
    return out


def run(engine: Engine, pool: list[Request], count: int) -> None:
    for index in range(count):
        path, query, body = pool[index % len(pool)]
        engine.handle("POST", path, body, client=str(index % 64), query=query, headers=HEADERS)


def best_us(pool: list[Request], count: int, rounds: int = 3) -> float:
    """The best round's CPU per request, in microseconds."""
    figures = []
    for _ in range(rounds):
        engine = Engine()
        run(engine, pool, 400)
        started = time.process_time()
        run(engine, pool, count)
        figures.append((time.process_time() - started) / count * 1e6)
    return min(figures)


def instructions(stream: bool, path: str | None, count: int = 400) -> float:
    """Instructions a request, counted by callgrind in a child running `_counted`."""
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={Path(tmp) / 'callgrind.out'}",
            "--toggle-collect=sys_call_tracing*",
            sys.executable,
            __file__,
            "--counted",
            str(count),
            *(["--stream"] if stream else []),
            *(["--path", path] if path else []),
        ]
        done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind failed: {done.stderr[-1000:]}")
    return int(found[1]) / count


def _counted(pool: list[Request], count: int) -> None:
    engine = Engine()
    run(engine, pool, 400)
    gc.collect()  # the warm-up's garbage is not the measured requests'
    sys.call_tracing(run, (engine, pool, count))


def main() -> None:
    parser = argparse.ArgumentParser(description="Engine.handle's CPU per request on the serve rows' pool.")
    parser.add_argument("--stream", action="store_true", help="the streamed pool")
    parser.add_argument("--profile", action="store_true", help="then cProfile 4,000 requests")
    parser.add_argument("--instructions", action="store_true", help="instructions a request, by callgrind")
    parser.add_argument("--path", help="with --instructions: one provider's path, e.g. /v1/responses")
    parser.add_argument("--counted", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    mode = "streamed" if options.stream else "plain"
    if options.counted is not None:
        pool = requests(options.stream)
        _counted([r for r in pool if r[0] == options.path] if options.path else pool, options.counted)
        return
    if options.instructions:
        if shutil.which("valgrind") is None:
            raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
        figure = instructions(options.stream, options.path)
        print(f"Engine.handle, {mode}, {options.path or 'pool'}: {figure / 1000:.1f}k instructions a request")
        return
    pool = requests(options.stream)
    paths = sorted({path for path, _, _ in pool})
    alone = {path: best_us([r for r in pool if r[0] == path], 1000) for path in paths}
    print(f"Engine.handle, {mode}: pool {best_us(pool, 2000):.1f} us a request")
    for path, figure in alone.items():
        print(f"  {path}: {figure:.1f} us")
    if options.profile:
        engine = Engine()
        run(engine, pool, 400)
        profile = cProfile.Profile()
        profile.runcall(run, engine, pool, 4000)
        stats = pstats.Stats(profile)
        stats.sort_stats("cumtime").print_stats(40)
        stats.sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
