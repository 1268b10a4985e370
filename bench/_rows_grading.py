"""Rows of grading: `pytest challenges/ --impl solutions` against a trivial pytest run, what bubblewrap
costs learner code (`_sandbox`), and how long a learner waits for `sandbox check` and `sandbox watch`
(`_learner`). Works in temporary folders; the checkout's challenges are only read."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _table import ROOT, Row, Settings

# -- row: the challenges under the grading plugin ------------------------------------------------


def row_challenges(settings: Settings) -> list[Row]:
    name = "pytest challenges/ --impl solutions"
    tests = [
        path
        for path in (ROOT / "challenges").rglob("*.py")
        if path.name.startswith("test_") or path.name.endswith("_test.py")
    ]
    if not tests:
        return [Row(name, None, "pytest on one trivial test", "< 3 s", None, "n/a: challenges/ has no tests yet")]
    import _learner

    env = _learner.environment()  # bytecode cached, as a learner's Python caches it: both sides alike
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "test_trivial.py").write_text("def test_trivial():\n    pass\n")
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        base_times: list[float] = []
        times: list[float] = []
        code, tail = 0, [""]
        for _ in range(2 if settings.quick else 3):
            started = time.perf_counter()
            subprocess.run([*command, tmp], cwd=tmp, env=env, capture_output=True, check=False)
            base_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            done = subprocess.run(
                [*command, "challenges/", "--impl", "solutions"],
                cwd=ROOT, env=env, capture_output=True, text=True, check=False,
            )  # fmt: skip
            times.append(time.perf_counter() - started)
            code, tail = done.returncode, (done.stdout + done.stderr).strip().splitlines()[-1:]
    wall, base = min(times), min(base_times)
    note = "" if code == 0 else f"; exit {code} (failures are timed too): {tail[0] if tail else ''}"
    return [
        Row(
            name,
            wall / base,
            "pytest on one trivial test",
            "< 3 s",
            wall < 3,
            f"{wall:.2f} s vs {base:.2f} s{note}",
        )
    ]


# -- row: sandbox ------------------------------------------------------------------------------------


def row_sandbox(settings: Settings) -> list[Row]:
    """What bubblewrap costs learner code (bench/_sandbox.py): against the same in plain processes."""
    import _sandbox

    why = _sandbox.usable()
    if why:
        return [Row("sandbox: bubblewrap", None, "plain processes", "<= 1.2x", None, f"n/a: {why}")]
    measured = _sandbox.worker_and_dialogue(3 if settings.quick else 5, 5 if settings.quick else 10, 30)
    (start, talk), (start_p, talk_p) = measured["auto"], measured["process"]
    runs = _sandbox.catalogue_run(1 if settings.quick else 2)
    (wall, said), (wall_p, said_p) = runs["auto"], runs["process"]
    return [
        Row("sandbox: worker start (fork + import + answer)", start / start_p, "the same, plain processes", "< 2x",
            start / start_p < 2, f"{start * 1e3:.1f} ms vs {start_p * 1e3:.1f} ms"),
        Row("sandbox: one dialogue (3 requests over the endpoint)", talk / talk_p, "the same, plain processes",
            "<= 1.2x", talk / talk_p <= 1.2, f"{talk * 1e3:.2f} ms vs {talk_p * 1e3:.2f} ms"),
        Row("sandbox: pytest challenges/ --impl solutions", wall / wall_p, "--isolation process", "<= 1.2x",
            wall / wall_p <= 1.2, f"{wall:.2f} s vs {wall_p:.2f} s ({said}; {said_p})"),
    ]  # fmt: skip


# -- rows: a learner's wait for feedback (bench/_learner.py) ----------------------------------------


def row_learner(settings: Settings) -> list[Row]:
    import _learner

    rounds = 3 if settings.quick else 5
    with tempfile.TemporaryDirectory(prefix="bench-learner-") as tmp:
        where = Path(tmp)
        challenges = _learner.workspace(where, "02_assistant_text")
        shutil.copy(ROOT / "solutions" / "02_bounded_loop.py", challenges / "02_bounded_loop" / "exercise.py")
        count = _learner.count_tests(challenges, "02_bounded_loop")
        trivial = _learner.trivial(where, count)
        from sandbox.grading.judge._progress import GRADING_PLUGINS

        floors, stricter, checks, last = [], [], [], ""
        for _ in range(rounds):
            floors.append(_learner.floor(where, trivial))
            stricter.append(_learner.floor(where, trivial, *GRADING_PLUGINS))
            seconds, code, last = _learner.check(challenges, "2")
            checks.append(seconds)
        base, wall, strict = min(floors), min(checks), min(stricter)
        rows = [
            Row(
                f"sandbox check 2 ({count} tests, passing)",
                wall / base,
                f"pytest on {count} trivial tests, same venv and config",
                "<= 1.5x",
                wall / base <= 1.5 and code == 0,
                f"{wall:.2f} s vs {base:.2f} s (median {statistics.median(checks):.2f} vs "
                f"{statistics.median(floors):.2f}); {wall / strict:.2f}x the floor with the check's own plugins "
                f"only ({strict:.2f} s); last line: {last}",
            )
        ]
        mistake = ROOT / "tests" / "mutants" / "02_assistant_text" / "02_bounded_loop.py"
        shutil.copy(mistake, challenges / "02_bounded_loop" / "exercise.py")
        watch = _learner.Watch(challenges)
        try:
            watch.wait()  # the first grade: 01 passes, 02 fails
            saves = [watch.save("02_bounded_loop", round_) for round_ in range(rounds)]
        finally:
            watch.close()
        best = min(saves)
        rows.append(
            Row(
                "sandbox watch: a save of a failing exercise re-graded, up to its first failure",
                best / base,
                f"pytest on {count} trivial tests, same venv and config",
                "< 1 s, <= 1x",
                best < 1.0 and best <= base,
                f"{best:.2f} s vs {base:.2f} s (saves: {', '.join(f'{s:.2f}' for s in saves)} s)",
            )
        )
    return rows
