"""The engine's CPU per request on the serve rows' pool, without the server: what an engine change
moves, measured in seconds rather than the serve rows' minutes.

    python bench/engine.py                    plain: the pool's average, then each provider alone
    python bench/engine.py --stream           the same pool, streamed
    python bench/engine.py --profile          then cProfile of 4,000 requests (cumulative, then own time)

Each figure is the best of three rounds on a fresh engine (400 requests of warm-up, then 2,000 of the
pool or 1,000 of one provider), in CPU time of this process. For an A/B, run it from two checkouts in
turn, several times, each with its own venv, and read bests and ratios: the machine may be shared.
`Engine.handle` is called as the server calls it: path and query apart, a `content-type` header, 64
senders in turn (the repeat guard's keys).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
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


def main() -> None:
    parser = argparse.ArgumentParser(description="Engine.handle's CPU per request on the serve rows' pool.")
    parser.add_argument("--stream", action="store_true", help="the streamed pool")
    parser.add_argument("--profile", action="store_true", help="then cProfile 4,000 requests")
    options = parser.parse_args()
    pool = requests(options.stream)
    paths = sorted({path for path, _, _ in pool})
    alone = {path: best_us([r for r in pool if r[0] == path], 1000) for path in paths}
    mode = "streamed" if options.stream else "plain"
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
