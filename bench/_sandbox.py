"""The `sandbox` rows: what running learner code under bubblewrap costs (issue 17).

- a worker start (the zygote forks a worker, which imports the learner's module and answers), under
  bubblewrap against the same in plain processes;
- a dialogue with a loaded worker (three model requests over the endpoint), the same two ways: the
  sandboxed worker reaches the endpoint through a Unix socket, the plain one over loopback TCP;
- `pytest challenges/ --impl solutions` with `--isolation auto` (bubblewrap) against `--isolation process`.

Each pair runs in alternating rounds and keeps each side's best, as the rest of the bench does.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from _learner import environment

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def usable() -> str:
    """Why bubblewrap cannot be measured here ("" when it can)."""
    from sandbox.grading.boundary._isolation import choose

    isolation = choose("auto")
    return "" if isolation.sandboxed else isolation.why


def _machinery(mode: str):  # type: ignore[no-untyped-def]
    from sandbox.grading.boundary._implementations import Implementations
    from sandbox.grading.boundary._isolation import choose
    from sandbox.grading.judge._challenge import Challenge, Deadlines

    implementations = Implementations(choose(mode))
    implementations.start()
    source = (ROOT / "solutions" / "02_bounded_loop.py").resolve()
    challenge = Challenge("02_bounded_loop", source, "02_bounded_loop.py", implementations, Deadlines(30))
    return implementations, challenge


def worker_and_dialogue(rounds: int, starts: int, dialogues: int) -> dict[str, tuple[float, float]]:
    """Mode -> (best seconds per worker start, best seconds per dialogue). A process holds one zygote at a
    time (`shared_zygote`), so each round starts each mode's afresh, in alternating order."""
    best = {mode: [float("inf"), float("inf")] for mode in ("auto", "process")}
    for index in range(rounds):
        for mode in ("auto", "process") if index % 2 else ("process", "auto"):
            implementations, challenge = _machinery(mode)
            try:
                challenge.function("complete")  # the zygote is up before the clock starts
                started = time.perf_counter()
                for _ in range(starts):
                    implementations.discard(challenge.source)
                    challenge.function("complete")
                best[mode][0] = min(best[mode][0], (time.perf_counter() - started) / starts)
                function = challenge.function("complete")
                started = time.perf_counter()
                for _ in range(dialogues):
                    talk = challenge.dialogue("multi_step", "openai")
                    talk.call(function, talk.client, talk.request, talk.run)
                best[mode][1] = min(best[mode][1], (time.perf_counter() - started) / dialogues)
            finally:
                implementations.close()
    return {mode: (values[0], values[1]) for mode, values in best.items()}


def catalogue_run(rounds: int) -> dict[str, tuple[float, str]]:
    """Mode -> (best wall seconds of `pytest challenges/ --impl solutions`, its last line)."""
    best: dict[str, tuple[float, str]] = {}
    for index in range(rounds):
        for mode in ("auto", "process") if index % 2 else ("process", "auto"):
            command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "challenges/"]
            command += ["--impl", "solutions", "--isolation", mode]
            started = time.perf_counter()
            done = subprocess.run(command, cwd=ROOT, env=environment(), capture_output=True, text=True, check=False)
            wall = time.perf_counter() - started
            tail = (done.stdout + done.stderr).strip().splitlines()[-1:]
            if mode not in best or wall < best[mode][0]:
                best[mode] = (wall, f"exit {done.returncode}: {tail[0] if tail else ''}")
    return best
