"""The `programs` rows (issue 37): how long `sandbox grade` takes a Go learner, each against the same
challenges' tests run by pytest on the Python reference solutions in the same run.

- `sandbox grade -- ./loop`, the Go reference (`examples/go/loop`) on every challenge and wire format,
  against `pytest challenges/ --impl solutions`;
- `sandbox grade 2 -- ./loop`, one challenge, against `pytest challenges/02_bounded_loop --impl solutions`;
- `sandbox watch 2 --build 'go build -o loop .' -- ./loop` in a module made by `sandbox init go`: from
  a save of `main.go` to the verdict's last line (the build included), against the same pytest run of 02.

Each subject's wall clock and CPU time (its process and every child it waited for, `RUSAGE_CHILDREN`):
on a machine shared with other work the wall clock waits for a core, and the CPU time does not.
Works in temporary folders, with Go's own cache; nothing is downloaded (GOPROXY=off).
"""

from __future__ import annotations

import os
import resource
import selectors
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _table import ROOT, Row, Settings

SANDBOX = [sys.executable, "-m", "sandbox"]
GO_ENV = {"GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local", "CGO_ENABLED": "0"}


def row_programs(settings: Settings) -> list[Row]:
    if not shutil.which("go"):
        return [Row("sandbox grade of the Go reference", None, "pytest", "< 30 s", None, "n/a: no go on PATH")]
    env = {**os.environ, **GO_ENV}
    rounds = 1 if settings.quick else 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-programs-") as scratch:
        folder = Path(scratch)
        folder.chmod(0o755)  # grading as root, the program runs as nobody: it must reach its folder
        binary = folder / "loop"
        subprocess.run(["go", "build", "-o", str(binary), "./loop"], cwd=ROOT / "examples" / "go", env=env, check=True)
        pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        for label, number, target in (("every challenge", None, 30.0), ("one challenge (02)", "2", 3.0)):
            grade = [*SANDBOX, "grade", *([number] if number else []), "--", str(binary)]
            python = [*pytest, "challenges/" + ("02_bounded_loop" if number else ""), "--impl", "solutions"]
            subject: list[tuple[float, float]] = []
            baseline: list[tuple[float, float]] = []
            for _ in range(rounds):
                baseline.append(_timed(python, ROOT, env))
                subject.append(_timed(grade, folder, env))
            wall, cpu = min(subject)
            base_wall, base_cpu = min(baseline)
            rows.append(
                Row(
                    f"sandbox grade of the Go reference, {label}",
                    wall / base_wall,
                    "pytest on the Python reference, same challenges",
                    f"< {target:g} s (idle 2-core)",
                    wall < target,
                    f"{wall:.1f} s vs {base_wall:.1f} s wall; CPU {cpu:.1f} s vs {base_cpu:.1f} s; {_load()}",
                )
            )
        saves = _watch_saves(folder / "module", env, 2 if settings.quick else 4)
        base_wall, _ = min(
            _timed([*pytest, "challenges/02_bounded_loop", "--impl", "solutions"], ROOT, env) for _ in range(rounds)
        )
        median = statistics.median(saves)
        rows.append(
            Row(
                "sandbox watch 2 of a Go module: a save rebuilt and re-graded, to the verdict",
                median / base_wall,
                "pytest on the Python reference of 02",
                "< 2 s (idle 2-core)",
                median < 2,
                f"median {median:.2f} s vs {base_wall:.2f} s (saves: {', '.join(f'{s:.2f}' for s in saves)} s); "
                f"{_load()}",
            )
        )
    return rows


def _timed(command: Sequence[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of `command` (it must pass)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{(done.stdout + done.stderr)[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _watch_saves(module: Path, env: dict[str, str], count: int) -> list[float]:
    """Seconds from each save of main.go to the line that ends its verdict, in `sandbox watch 2`."""
    subprocess.run([*SANDBOX, "init", "go", str(module)], env=env, check=True, capture_output=True)
    for path in [module, *module.rglob("*")]:  # the build runs in the program's sandbox: as nobody under root
        path.chmod(0o777 if path.is_dir() else 0o666)
    command = [*SANDBOX, "watch", "2", "--build", "go build -o loop .", "--", "./loop"]
    process = subprocess.Popen(
        command, cwd=module, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    screen = b""

    def verdicts(wanted: int) -> None:
        nonlocal screen
        deadline = time.monotonic() + 300
        while screen.count(b"Waiting for you to save") < wanted:
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit(f"sandbox watch gave no verdict {wanted}:\n{screen[-3000:].decode(errors='replace')}")
            if selector.select(1.0):
                screen += os.read(process.stdout.fileno(), 1 << 16)  # type: ignore[union-attr]

    saves = []
    try:
        verdicts(1)
        for number in range(2, count + 2):
            started = time.perf_counter()
            os.utime(module / "main.go")
            verdicts(number)
            saves.append(time.perf_counter() - started)
        if b"02_bounded_loop  passed" not in screen:
            raise SystemExit(f"the Go module failed 02:\n{screen[-3000:].decode(errors='replace')}")
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
    return saves


def _load() -> str:
    one, five, _ = os.getloadavg()
    busy = " (measured on a busy machine)" if one > (os.cpu_count() or 1) else ""
    return f"load average {one:.1f} / {five:.1f} on {os.cpu_count()} CPUs{busy}"
