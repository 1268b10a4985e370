"""Per-challenge tallies, statuses and progress bars: the run's summary, the CLI's list, the report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Tally", "bar", "challenge_lines"]

PASSED, FAILED, NOT_STARTED = "passed", "failed", "not started"


@dataclass
class Tally:
    """How one challenge's tests went."""

    passed: int = 0
    failed: int = 0
    not_started: int = 0
    first_failure: str = ""
    """The node id of its first failing test: where to look first."""
    collected: int = 0
    """Tests selected for the run; more than `total` when the run stopped early (`-x`)."""

    def add(self, outcome: str, nodeid: str) -> None:
        if outcome == PASSED:
            self.passed += 1
        elif outcome == NOT_STARTED:
            self.not_started += 1
        else:
            self.failed += 1
            self.first_failure = self.first_failure or nodeid

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.not_started

    @property
    def status(self) -> str:
        """`passed`, `failing`, `not started`, `in progress` (some parts passed, the rest not started),
        `incomplete` (the run stopped before all its tests ran) or `not graded` (none ran)."""
        if not self.total:
            return "not graded"
        if self.failed:
            return "failing"
        if self.not_started == self.total:
            return "not started"
        if self.not_started:
            return "in progress"
        if self.collected > self.total:
            return "incomplete"
        return "passed"


def bar(done: int, total: int, width: int = 20) -> str:
    filled = round(width * done / total) if total else 0
    return "[" + "#" * filled + "-" * (width - filled) + "]"


def challenge_lines(tallies: Mapping[str, Tally], titles: Mapping[str, str]) -> list[str]:
    """One line per challenge, then the overall progress bar."""
    width = max((len(name) for name in tallies), default=0)
    lines = []
    for name, tally in tallies.items():
        total = max(tally.total, tally.collected)
        lines.append(
            f"  {name:<{width}}  {tally.status:<11}  {bar(tally.passed, total, 10)} "
            f"{tally.passed:>3}/{total:<3}  {titles.get(name, '')}".rstrip()
        )
    done = sum(tally.status == "passed" for tally in tallies.values())
    lines += ["", f"Progress {bar(done, len(tallies))} {done}/{len(tallies)} challenges passed"]
    return lines
