"""The `learner` rows (issue 20): how long a learner waits for feedback, each against the floor a
learner cannot go below, a bare pytest run of as many trivial tests in the same venv under the same
pytest configuration (so the same plugins load).

- `sandbox check 2` on a passing exercise, against 20 trivial tests;
- `sandbox watch`: from saving an exercise to the last line of its re-grade, against the same floor;

`sandbox check` runs pytest with only the sandbox's plugin (`GRADING_PLUGINS`); the floor autoloads
every plugin the venv installs, as a bare `pytest` does. The row also gives the floor under the check's
own plugin set, so both comparisons are in the table.

Everything runs in a throwaway copy of `challenges/` (the reference solutions as the exercises, one
mistake where the watch waits), with the project's pytest configuration beside it.
"""

from __future__ import annotations

import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
WAITING = b"Waiting for you to save"


def workspace(where: Path, mistake: str) -> Path:
    """`where/challenges`, every exercise the reference solution except 02's, which is `mistake` (a
    mutant directory): `sandbox watch` stops there. Returns the challenges folder."""
    challenges = where / "challenges"
    ignored = shutil.ignore_patterns(".sandbox-state.json", "__pycache__")
    shutil.copytree(ROOT / "challenges", challenges, ignore=ignored)
    for folder in challenges.iterdir():
        solution = ROOT / "solutions" / f"{folder.name}.py"
        if solution.exists():
            shutil.copy(solution, folder / "exercise.py")
    mutant = ROOT / "tests" / "mutants" / mistake / "02_bounded_loop.py"
    shutil.copy(mutant, challenges / "02_bounded_loop" / "exercise.py")
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    config = "\n".join(f"{key} = {_toml(value)}" for key, value in options.items() if key != "testpaths")
    (where / "pyproject.toml").write_text(f"[tool.pytest.ini_options]\n{config}\n", encoding="utf-8")
    return challenges


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def trivial(where: Path, count: int) -> Path:
    path = where / "trivial" / "test_trivial.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(
        f"import pytest\n\n\n@pytest.mark.parametrize('n', range({count}))\ndef test_trivial(n):\n    assert n >= 0\n"
    )
    return path


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a learner's Python caches bytecode: measure that
    env.pop("NO_COLOR", None)
    return env


def floor(where: Path, tests: Path, *options: str) -> float:
    """Seconds for `pytest -q -p no:cacheprovider [options] tests`: with no options, what a bare pytest
    costs in this venv (every installed plugin autoloaded); with `GRADING_PLUGINS`, the same plugin set
    `sandbox check` runs with, for a stricter comparison."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, str(tests.relative_to(where))],
        cwd=where, env=environment(), capture_output=True, check=False,
    )  # fmt: skip
    return time.perf_counter() - started


def sandbox_command() -> list[str]:
    return [sys.executable, "-m", "sandbox"]


def check(challenges: Path, number: str) -> tuple[float, int, str]:
    """Seconds for `sandbox check N`, its exit status and its last line."""
    started = time.perf_counter()
    done = subprocess.run(
        [*sandbox_command(), "check", number, "--dir", str(challenges)],
        cwd=challenges.parent, env=environment(), capture_output=True, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    lines = done.stdout.decode(errors="replace").strip().splitlines()
    return seconds, done.returncode, lines[-1] if lines else ""


def count_tests(challenges: Path, folder: str) -> int:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", f"challenges/{folder}"],
        cwd=challenges.parent, env=environment(), capture_output=True, text=True, check=False,
    )  # fmt: skip
    return sum(1 for line in done.stdout.splitlines() if "::" in line)


class Watch:
    """`sandbox watch` in a subprocess, read line by line: the time from a save to its re-grade's end."""

    def __init__(self, challenges: Path) -> None:
        self.challenges = challenges
        self.process = subprocess.Popen(
            [*sandbox_command(), "watch", "--dir", str(challenges)],
            cwd=challenges.parent, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True,  # its group holds the graders it starts: closed whole
        )  # fmt: skip
        assert self.process.stdout is not None
        os.set_blocking(self.process.stdout.fileno(), False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.process.stdout, selectors.EVENT_READ)
        self.seen = b""

    def wait(self, deadline: float = 120.0) -> bytes:
        """Everything printed until the next 'Waiting for you to save' line."""
        assert self.process.stdout is not None
        end = time.monotonic() + deadline
        while WAITING not in self.seen:
            if time.monotonic() > end or self.process.poll() is not None:
                raise RuntimeError(f"sandbox watch did not re-grade: {self.seen[-2000:]!r}")
            for _ in self.selector.select(timeout=0.05):
                self.seen += self.process.stdout.read() or b""
        printed, _, self.seen = self.seen.partition(WAITING)
        return printed

    def save(self, folder: str, round_: int) -> float:
        """Rewrite `folder`'s exercise (a new comment, the same code) and time its re-grade."""
        exercise = self.challenges / folder / "exercise.py"
        text = re.sub(r"\n# saved \d+\n$", "\n", exercise.read_text(encoding="utf-8"))
        started = time.perf_counter()
        exercise.write_text(f"{text}# saved {round_}\n", encoding="utf-8")
        self.wait()
        return time.perf_counter() - started

    def close(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        except ProcessLookupError:
            pass
        self.selector.close()
