"""Grading speed of this checkout against another one (a worktree of main), under strict isolation.

    python bench/against.py --baseline ../main             5 rounds
    python bench/against.py --baseline ../main --quick     2 rounds

Two subjects, each run as an instructor runs it, in each checkout (its own `sandbox` package first on
`PYTHONPATH`), the checkouts taking turns in every round so that load from other processes hits both
alike; the figure is each side's best round, and the ratio this checkout's over the baseline's:

- `pytest challenges/ --impl solutions --isolation strict` (every challenge, every wire format);
- `sandbox grade --wire openai --isolation strict -- node examples/js/loop.mjs` (every challenge's
  cases on one wire format).

`--isolation strict` needs bubblewrap: without it, `auto` is measured and the line says so. Target:
this checkout within 1.2x of the baseline. Everything talks to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True, help="the checkout to compare with")
    parser.add_argument("--quick", action="store_true", help="2 rounds rather than 5")
    args = parser.parse_args()
    baseline = args.baseline.resolve()
    if not (baseline / "sandbox").is_dir():
        parser.error(f"--baseline {args.baseline}: no sandbox/ package there; name a checkout of this project")
    mode = "strict" if shutil.which("bwrap") else "auto"
    subjects = {
        "pytest challenges/ --impl solutions": [
            sys.executable, "-m", "pytest", "challenges/", "--impl", "solutions", "-q", "-p", "no:cacheprovider",
            "--isolation", mode,
        ],
        "sandbox grade --wire openai -- node examples/js/loop.mjs": [
            sys.executable, "-m", "sandbox", "grade", "--wire", "openai", "--isolation", mode, "--",
            "node", "examples/js/loop.mjs",
        ],
    }  # fmt: skip
    rounds = 2 if args.quick else 5
    print(f"{rounds} rounds, --isolation {mode}; this checkout {ROOT} against {baseline}")
    failed = False
    for name, command in subjects.items():
        best = {ROOT: float("inf"), baseline: float("inf")}
        for _ in range(rounds):
            for checkout in (baseline, ROOT):
                best[checkout] = min(best[checkout], _timed(command, checkout))
        ratio = best[ROOT] / best[baseline]
        failed = failed or ratio > TARGET
        verdict = "yes" if ratio <= TARGET else "no"
        print(f"| {name} | {ratio:.2f}x | <= {TARGET}x | {verdict} | {best[ROOT]:.2f} s vs {best[baseline]:.2f} s |")
    return 1 if failed else 0


def _timed(command: list[str], checkout: Path) -> float:
    """Seconds for one run of `command` in `checkout`, with a throwaway HOME; a run that fails stops here."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "COV_"))}
    with tempfile.TemporaryDirectory(prefix="bench-against-") as home:
        env.update(HOME=home, PYTHONPATH=str(checkout), PYTHONDONTWRITEBYTECODE="1")
        started = time.perf_counter()
        done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} in {checkout} exited {done.returncode}:\n{done.stdout[-2000:]}")
    return elapsed


if __name__ == "__main__":
    sys.exit(main())
