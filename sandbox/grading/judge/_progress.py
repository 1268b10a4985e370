"""Grading from the command line: pytest in a subprocess (a hanging learner cannot take the CLI with
it), and the progress the plugin records in the state file. `sandbox watch` grades each save in a warm
grader (`_warm`), a subprocess that stays loaded between saves.

Whether a run passed is read from the grader's own tallies (the report it writes in a private
folder, whose path is not printed), never from pytest's exit status alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ._meta import ChallengeInfo
from ._state import State
from ._summary import Tally, challenge_lines
from ._warm import WarmGrader, forget_test_modules

__all__ = ["CLEAR", "Progress", "pytest_command"]

CLEAR = "\033[H\033[2J\033[3J"
"""Cursor home, clear the screen and its scrollback: what `sandbox watch` prints before each grade on a
terminal, so only the latest one shows."""


GRADING_PLUGINS = ("--disable-plugin-autoload", "-p", "sandbox.pytest_plugin")
"""The only plugin a grade needs is the sandbox's own. Every other plugin the venv's packages install
(anyio's, respx's, hypothesis's, a framework's tracer: dozens with the project's dev extras) would be
imported and registered on every check and every save for nothing, and pytest walks each installed
distribution's files to mark them for assertion rewriting. A test run of the learner's own is untouched:
this is only the command `sandbox check`, `list` and `watch` build."""


def pytest_command(root: Path, challenges: Sequence[ChallengeInfo], *extra: str) -> list[str]:
    paths = [challenge.folder.relative_to(root.parent).as_posix() for challenge in challenges]
    color = ["--color=yes"] if sys.stdout.isatty() else []
    return [sys.executable, "-m", "pytest", *paths, "-q", "-p", "no:cacheprovider", *GRADING_PLUGINS, *color, *extra]


def _all_passed(report: Path, challenges: Sequence[ChallengeInfo]) -> bool:
    """What the grader's report says: every challenge graded, and passed."""
    try:
        statuses = json.loads(report.read_text(encoding="utf-8"))["extra_data"]["challenges"]
        return all(statuses[info.name]["status"] == "passed" for info in challenges)
    except (OSError, ValueError, KeyError, TypeError):
        return False


class Progress:
    """The challenge set's grades, kept fresh: a challenge whose exercise changed is graded again."""

    def __init__(self, root: Path, challenges: Sequence[ChallengeInfo]) -> None:
        self.root = root
        self.challenges = list(challenges)

    def run(self, challenges: Sequence[ChallengeInfo], *extra: str, quiet: bool = False) -> int:
        """Grade `challenges` with pytest (from the project root, so its configuration applies): 0 when the
        grader's tallies say every one of them passed, 1 otherwise."""
        output = subprocess.DEVNULL if quiet else None
        with tempfile.TemporaryDirectory(prefix="sandbox-check-") as scratch:
            report = Path(scratch) / "results.json"
            command = pytest_command(self.root, challenges, "--sandbox-cli-report", str(report), *extra)
            subprocess.run(command, cwd=self.root.parent, stdout=output, stderr=output, check=False)
            return 0 if _all_passed(report, challenges) else 1

    def run_here(self, challenges: Sequence[ChallengeInfo]) -> int:
        """As `run`, in this process (`sandbox check`): one Python start and one import of the sandbox,
        not two. The learner's code still runs in workers, which the grader stops at their deadline, so
        it cannot hang this process either."""
        import pytest

        with tempfile.TemporaryDirectory(prefix="sandbox-check-") as scratch:
            report = Path(scratch) / "results.json"
            command = pytest_command(self.root, challenges, "--sandbox-cli-report", str(report))
            here = Path.cwd()
            forget_test_modules(self.root.resolve())
            os.chdir(self.root.parent)  # where pytest finds the project's configuration, as in `run`
            try:
                pytest.main(command[3:])
            finally:
                os.chdir(here)
                forget_test_modules(self.root.resolve())  # nor leave them to whatever runs next here
            return 0 if _all_passed(report, challenges) else 1

    def run_warm(self, grader: WarmGrader, challenges: Sequence[ChallengeInfo], *extra: str) -> int:
        """As `run`, in the warm grader: the same command line, read back the same way."""
        with tempfile.TemporaryDirectory(prefix="sandbox-watch-") as scratch:
            report = Path(scratch) / "results.json"
            command = pytest_command(self.root, challenges, "--sandbox-cli-report", str(report), *extra)
            grader.run(command[3:])  # without `python -m pytest`
            return 0 if _all_passed(report, challenges) else 1

    def tallies(self, *, refresh: bool = True) -> dict[str, Tally]:
        """Each challenge's last grade, grading (quietly) those that changed since."""
        state = State(self.root)
        stale = [info for info in self.challenges if state.result(info.name, info.exercise) is None]
        if stale and refresh:
            self.run(stale, quiet=True)
            state = State(self.root)
        tallies = {}
        for info in self.challenges:
            result = state.result(info.name, info.exercise) or {}
            tallies[info.name] = Tally(
                passed=int(result.get("passed", 0)),
                failed=int(result.get("failed", 0)),
                not_started=int(result.get("not_started", 0)),
                first_failure=str(result.get("first_failure", "")),
            )
        return tallies

    def lines(self, tallies: dict[str, Tally]) -> list[str]:
        lines = challenge_lines(tallies, {info.name: info.title for info in self.challenges})
        unfinished = next((info for info in self.challenges if tallies[info.name].status != "passed"), None)
        if unfinished is None:
            lines.append("Every challenge passes. Compare with the reference: sandbox solution N.")
        else:
            number = unfinished.number
            lines.append(f"Next: sandbox check {number}   (stuck? sandbox hint {number})")
        return lines

    def watch(self, interval: float, announce: Callable[[str], None], *, clear: bool = False) -> None:
        """Grade the first unfinished challenge, up to its first failure; again whenever a file is saved.
        With `clear`, the screen is cleared before each grade."""
        grader = WarmGrader(self.root.parent, self.root)
        try:
            seen = self._mtimes()
            self._grade_first_unfinished(grader, announce, clear)
            while True:
                time.sleep(interval)
                now = self._mtimes()
                if now != seen:
                    seen = now
                    self._grade_first_unfinished(grader, announce, clear)
        finally:
            grader.close()

    def _mtimes(self) -> dict[Path, float]:
        found = {}
        for info in self.challenges:
            for path in info.folder.glob("*.py"):
                try:
                    found[path] = path.stat().st_mtime
                except OSError:  # saved by an editor that replaces the file: caught next time round
                    continue
        return found

    def _grade_first_unfinished(self, grader: WarmGrader, announce: Callable[[str], None], clear: bool) -> None:
        state = State(self.root)
        for info in self.challenges:
            result = state.result(info.name, info.exercise)
            if result is not None and result.get("status") == "passed":
                continue
            announce(f"{CLEAR if clear else ''}\n=== {info.name}: {info.title} ({time.strftime('%H:%M:%S')})")
            if self.run_warm(grader, [info], "--sandbox-first-failure") != 0:
                announce(f"Waiting for you to save a file... (stuck? sandbox hint {info.number}; Ctrl-C to stop)")
                return
        announce(f"\nAll {len(self.challenges)} challenges pass. `sandbox solution N` shows a reference to compare.")
