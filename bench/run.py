"""The benchmarks: `python bench/run.py` prints one table; every figure is a ratio against a
baseline measured in the same run, so the table means the same on a laptop and on a loaded CI box.

    python bench/run.py                      every row (about 5 minutes)
    python bench/run.py --rows inproc,sdk    some rows (names below, in `ROWS`)
    python bench/run.py --quick              shorter runs, noisier figures
    python bench/run.py --profile            after the table, a cProfile of every subject that missed
    python bench/run.py --update-results     also rewrite the table in bench/RESULTS.md

Timing: the baseline and the subject run in alternating rounds, and each keeps its best round, so
noise from other processes hits both and the ratio compares the code, not the moment. The rows live
beside this file by what they measure: `_rows_client` (in one process), `_rows_serve` (the server),
`_rows_grading` (grading and a learner's wait), `_rows_programs` (`sandbox grade` and `watch` of a Go
program), `_rows_memory` (memory, limits, kept state) and `_rows_replay` (a recorded scenario against
one written by hand); what
they share, and the table, is `_table`.
"""

from __future__ import annotations

import argparse
import sys
import time

from _table import ROOT, Row, Settings, machine, render, update_results

sys.path.insert(0, str(ROOT))

from _rows_client import row_inproc, row_loop, row_sdk  # noqa: E402
from _rows_grading import row_challenges, row_learner, row_sandbox  # noqa: E402
from _rows_memory import memory_child, row_kept, row_limits, row_memory, row_stores  # noqa: E402
from _rows_programs import row_programs  # noqa: E402
from _rows_replay import row_replay  # noqa: E402
from _rows_scale import row_site, row_workers  # noqa: E402
from _rows_serve import row_serve, row_stalls  # noqa: E402
from _rows_startup import row_startup  # noqa: E402

ROWS = (
    "inproc",
    "loop",
    "sdk",
    "serve",
    "stalls",
    "challenges",
    "sandbox",
    "learner",
    "programs",
    "memory",
    "limits",
    "kept",
    "stores",
    "startup",
    "replay",
    "workers",
    "site",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, from: {', '.join(ROWS)}")
    parser.add_argument("--quick", action="store_true", help="shorter runs (noisier)")
    parser.add_argument("--profile", action="store_true", help="profile every subject that missed its target")
    parser.add_argument("--update-results", action="store_true", help="rewrite the table in bench/RESULTS.md")
    parser.add_argument("--memory-child", nargs=2, metavar=("MODE", "TOTAL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child[0], int(args.memory_child[1]))
        return 0
    chosen = [name.strip() for name in args.rows.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(ROWS))
    if unknown:
        parser.error(f"unknown rows {unknown}; choose from {', '.join(ROWS)}")
    settings = Settings(quick=args.quick)
    info = machine()
    print(f"Machine: {info}", flush=True)
    started = time.perf_counter()
    rows: list[Row] = []
    builders = {"inproc": row_inproc, "loop": row_loop, "sdk": row_sdk, "serve": row_serve, "stalls": row_stalls,
                "challenges": row_challenges, "sandbox": row_sandbox, "learner": row_learner, "programs": row_programs,
                "memory": row_memory, "limits": row_limits, "kept": row_kept, "stores": row_stores,
                "startup": row_startup, "replay": row_replay, "workers": row_workers, "site": row_site}  # fmt: skip
    for name in ROWS:
        if name in chosen:
            print(f"... {name}", file=sys.stderr, flush=True)
            rows.extend(builders[name](settings))
    seconds = time.perf_counter() - started
    table = render(rows)
    print(table)
    print(f"\n{seconds:.0f} s")
    if args.profile:
        for row in rows:
            if row.met is False and row.profile is not None:
                print(f"\n## Profile: {row.name}\n```\n{row.profile()}\n```")
    if args.update_results:
        update_results(table, info, seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
