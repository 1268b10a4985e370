"""What the room knows, in memory: learners by challenges, who is stuck, which rules are broken now.

May touch: nothing outside itself (no I/O, no clock of its own: every time is passed in). The store
is the durable copy, which every worker process shares; this is one process's view of it, reloaded
from the store whenever the store changed (see `RoomService`). A change is computed from what is
stored (`Room.after_run`) and stored; the view shows it once reloaded, so a failed write leaves the
view as it was.

A run is what one grader posted: per challenge of the room's catalogue the tallies, per failing
test the rule and the headline (and, for the first failure of each challenge, the feedback as the
learner saw it). `parse_run` refuses what is not valid, bounded, control-free text and says what
is wrong in one sentence; per-learner caps bound one learner's share of the page.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections import OrderedDict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._names import name_key

__all__ = ["Cell", "Learner", "Room", "RoomInputError", "parse_run", "status_of"]

CHALLENGE = re.compile(r"^[\w.-]{1,64}$")
MAX_FAILURES = 200
MAX_TEST = 200
MAX_RULE = 240
MAX_HEADLINE = 600
MAX_TEXT = 12_000
MAX_COUNT = 100_000
RULES_PER_CELL = 3
"""Distinct rules one cell shows: a cell names what broke, it is not a log."""
RULES_PER_LEARNER = 6
"""Distinct rules one learner adds to the page at most, whatever they post."""
OWN_LOOP = "their own loop"
"""Where a rule broken by a learner's own loop (seen by the room's server) is counted."""
MAX_CONVERSATIONS = 12
"""Conversations kept per learner, newest first: enough to see what a loop is doing now."""
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


class RoomInputError(ValueError):
    """A learner's post that the room refuses: the message says what to send instead."""


@dataclass
class Cell:
    """One learner on one challenge: the latest run's verdict, and how long it has stayed the same."""

    status: str
    passed: int
    total: int
    at: float
    rules: list[str]
    signature: tuple[tuple[str, str], ...]
    streak: int = 1
    """Consecutive runs with this same failure (the same tests failing on the same rules)."""
    since: float | None = None
    """When the first run of this streak arrived (None: at `at`)."""


@dataclass
class Learner:
    name: str
    joined: float
    last_run: float | None = None
    cells: dict[str, Cell] = field(default_factory=dict)
    latest_failure: dict[str, Any] | None = None
    conversations: OrderedDict[str, dict[str, Any]] = field(default_factory=OrderedDict)
    verified: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Challenge -> the instructor's own grading of it: status, passed, total, at."""


def status_of(passed: int, failed: int, not_started: int, collected: int) -> str:
    """The grader's own statuses (`sandbox.grading.judge._summary.Tally.status`), from posted counts."""
    total = passed + failed + not_started
    if not total:
        return "not graded"
    if failed:
        return "failing"
    if not_started == total:
        return "not started"
    if not_started:
        return "in progress"
    return "incomplete" if collected > total else "passed"


def text(value: object, limit: int, what: str, *, lines: bool = False) -> str:
    """`value` as the room keeps it: a string of valid Unicode without control characters (newlines and
    tabs too when `lines`), cut to `limit` characters; otherwise a `RoomInputError` saying so."""
    if not isinstance(value, str):
        raise RoomInputError(f"{what} must be a string, got {type(value).__name__}.")
    value = value[:limit]
    for char in value:
        if lines and char in "\n\t":
            continue
        category = unicodedata.category(char)
        if category == "Cs":
            raise RoomInputError(f"{what} is not valid Unicode (a lone surrogate, U+{ord(char):04X}): send UTF-8 text.")
        if category == "Cc" or char in _BIDI:
            raise RoomInputError(f"{what} holds the control character U+{ord(char):04X}: send plain text.")
    return value


def _count(value: object, what: str) -> int:
    if type(value) is not int or not 0 <= value <= MAX_COUNT:
        raise RoomInputError(f"{what} must be a whole number from 0 to {MAX_COUNT}, got {value!r:.40}.")
    return value


def parse_run(data: object, catalogue: Collection[str]) -> dict[str, Any]:
    """A posted run, checked against the room's `catalogue` of challenges and trimmed to the room's
    bounds: the only shape the store ever keeps."""
    if not isinstance(data, Mapping):
        raise RoomInputError("a run is a JSON object with `challenges` and `failures`.")
    challenges = data.get("challenges")
    if not isinstance(challenges, Mapping) or not challenges:
        raise RoomInputError("`challenges` must be an object: challenge name -> {passed, failed, not_started}.")
    tallies: dict[str, dict[str, int]] = {}
    for name, tally in challenges.items():
        if not CHALLENGE.match(str(name)):
            raise RoomInputError(f"challenge name {str(name)[:70]!r}: use the folder's name, e.g. 02_bounded_loop.")
        if name not in catalogue:
            listed = ", ".join(sorted(catalogue)[:12])
            raise RoomInputError(
                f"challenge {name!r} is not one of this room's challenges ({listed}): grade the challenges "
                "folder the instructor handed out."
            )
        if not isinstance(tally, Mapping):
            raise RoomInputError(f"challenges[{name!r}] must be an object of counts.")
        counts = {key: _count(tally.get(key, 0), f"challenges[{name!r}].{key}") for key in _COUNTS}
        counts["collected"] = max(counts["collected"], counts["passed"] + counts["failed"] + counts["not_started"])
        tallies[str(name)] = counts
    failures = data.get("failures", [])
    if not isinstance(failures, list) or len(failures) > MAX_FAILURES:
        raise RoomInputError(f"`failures` must be a list of at most {MAX_FAILURES} objects.")
    kept: list[dict[str, str]] = []
    for index, failure in enumerate(failures):
        if not isinstance(failure, Mapping):
            raise RoomInputError(f"failures[{index}] must be an object.")
        challenge = text(failure.get("challenge"), 64, f"failures[{index}].challenge")
        if challenge not in tallies:
            raise RoomInputError(f"failures[{index}].challenge {challenge!r} is not one of the run's challenges.")
        kept.append(
            {
                "challenge": challenge,
                "test": text(failure.get("test", ""), MAX_TEST, f"failures[{index}].test"),
                "rule": text(failure.get("rule", ""), MAX_RULE, f"failures[{index}].rule"),
                "headline": text(failure.get("headline", ""), MAX_HEADLINE, f"failures[{index}].headline"),
                "text": text(failure.get("text", ""), MAX_TEXT, f"failures[{index}].text", lines=True),
            }
        )
    source = data.get("source", "pytest")
    if source not in ("pytest", "grade"):
        raise RoomInputError("`source` is `pytest` or `grade`.")
    return {"source": source, "challenges": tallies, "failures": kept}


_COUNTS = ("passed", "failed", "not_started", "collected")


class Room:
    """The room's state. Not thread-safe: the room's event loop owns it."""

    def __init__(self, *, titles: Mapping[str, str], stuck_runs: int = 3, stuck_minutes: float = 10):
        self.titles = dict(titles)
        """The room's catalogue: challenge name -> title. The board's columns, and all a run may name."""
        self.stuck_runs = stuck_runs
        self.stuck_minutes = stuck_minutes
        self.learners: dict[str, Learner] = {}
        self.roster: dict[str, str] = {}
        """The instructor's list, name key -> name as listed (empty: anyone may join)."""
        self.version = 0
        """Moves with every change: the store's stamp of its latest change, as of the view's last
        reload (see `RoomService`), the same in every worker process."""

    def leave(self, name: str) -> None:
        self.learners.pop(name, None)
        self.version += 1

    def holder(self, key: str) -> str | None:
        """The learner whose name has this `name_key`, if any."""
        return next((name for name in self.learners if name_key(name) == key), None)

    @staticmethod
    def after_run(before: Learner, at: float, run: Mapping[str, Any]) -> Learner:
        """The learner `before` as they are after `run`, leaving `before` and the room unchanged."""
        learner = dataclasses.replace(before, last_run=at, cells=dict(before.cells))
        by_challenge: dict[str, list[Mapping[str, str]]] = {}
        for failure in run["failures"]:
            by_challenge.setdefault(failure["challenge"], []).append(failure)
        for challenge, counts in run["challenges"].items():
            failed = by_challenge.get(challenge, [])
            status = status_of(counts["passed"], counts["failed"], counts["not_started"], counts["collected"])
            signature = tuple(sorted((f["test"], f["rule"] or f["headline"]) for f in failed))
            old = learner.cells.get(challenge)
            same = old is not None and status == "failing" and old.signature == signature
            streak = old.streak + 1 if same and old is not None else 1
            since = (old.since or old.at) if same and old is not None else at
            rules = sorted({f["rule"] for f in failed if f["rule"]})[:RULES_PER_CELL]
            learner.cells[challenge] = Cell(
                status, counts["passed"], counts["collected"], at, rules, signature, streak, since
            )
            if failed:
                first = next((f for f in failed if f["text"]), failed[0])
                learner.latest_failure = {**first, "at": at}
        allowed: set[str] = set()
        for cell in learner.cells.values():
            cell.rules = [rule for rule in cell.rules if rule in allowed or len(allowed) < RULES_PER_LEARNER]
            allowed.update(cell.rules)
        return learner

    def replace(self, learner: Learner) -> None:
        self.learners[learner.name] = learner
        self.version += 1

    def apply_run(self, name: str, at: float, run: Mapping[str, Any]) -> None:
        self.replace(self.after_run(self.learners.get(name) or Learner(name, at), at, run))

    @staticmethod
    def merged(taken: Learner, kept: Learner) -> Learner:
        """`kept` with `taken`'s runs added, the newer cell of each challenge kept (both unchanged; the
        store moves the conversations, see `RoomDatabase.merge_learners`)."""
        cells = dict(kept.cells)
        for challenge, cell in taken.cells.items():
            if challenge not in cells or cell.at > cells[challenge].at:
                cells[challenge] = cell
        runs = [at for at in (taken.last_run, kept.last_run) if at is not None]
        failures = [f for f in (taken.latest_failure, kept.latest_failure) if f]
        return dataclasses.replace(
            kept,
            last_run=max(runs) if runs else None,
            cells=cells,
            latest_failure=max(failures, key=lambda f: float(f.get("at", 0))) if failures else None,
        )

    # -- what the page shows ----------------------------------------------------------------------

    def idle_since(self, learner: Learner, now: float) -> float | None:
        """Since when `learner` has had no run, once that is `stuck_minutes`, while something is left to pass."""
        since = learner.last_run if learner.last_run is not None else learner.joined
        finished = bool(learner.cells) and all(cell.status == "passed" for cell in learner.cells.values())
        return since if not finished and now - since >= self.stuck_minutes * 60 else None

    def snapshot(self, now: float) -> dict[str, Any]:
        """Everything the instructor's page shows, as plain JSON: the page renders it, the API returns it."""
        rows = []
        rules: dict[str, dict[str, set[str]]] = {}
        columns = {name: {"passed": 0, "failing": 0, "stuck": 0, "started": 0} for name in self.titles}
        queue = []
        for learner in sorted(self.learners.values(), key=lambda item: item.name.casefold()):
            cells = {}
            stuck_on: list[tuple[float, str, int]] = []
            for challenge, cell in learner.cells.items():
                if challenge not in self.titles:
                    continue
                stuck = cell.status == "failing" and cell.streak >= self.stuck_runs
                cells[challenge] = {
                    "status": cell.status,
                    "passed": cell.passed,
                    "total": cell.total,
                    "at": cell.at,
                    "streak": cell.streak,
                    "stuck": stuck,
                    "since": cell.since or cell.at,
                    "rules": cell.rules,
                }
                column = columns[challenge]
                column["started"] += 1
                column["passed"] += cell.status == "passed"
                column["failing"] += cell.status == "failing"
                column["stuck"] += stuck
                if stuck:
                    stuck_on.append((cell.since or cell.at, challenge, cell.streak))
                if cell.status == "failing":
                    for rule in cell.rules:
                        entry = rules.setdefault(rule, {"learners": set(), "challenges": set()})
                        entry["learners"].add(learner.name)
                        entry["challenges"].add(challenge)
            latest = next(reversed(learner.conversations.values()), None)
            refused = latest.get("outcome") if latest is not None else None
            if refused and refused.get("rule"):  # their own loop's last request was refused: broken now
                entry = rules.setdefault(str(refused["rule"]), {"learners": set(), "challenges": set()})
                entry["learners"].add(learner.name)
                entry["challenges"].add(OWN_LOOP)
            idle = self.idle_since(learner, now)
            reasons = [
                (since, f"the same failure {streak} runs in a row", challenge) for since, challenge, streak in stuck_on
            ]
            if idle is not None:
                reasons.append((idle, f"no run for {self.stuck_minutes:g}+ min", ""))
            stuck_since = min(reason[0] for reason in reasons) if reasons else None
            if reasons:
                queue.append(
                    {
                        "name": learner.name,
                        "since": stuck_since,
                        "why": [{"what": what, "challenge": challenge} for _, what, challenge in sorted(reasons)],
                    }
                )
            rows.append(
                {
                    "name": learner.name,
                    "last_run": learner.last_run,
                    "idle": idle is not None,
                    "stuck": bool(reasons),
                    "stuck_since": stuck_since,
                    "passed": sum(cell["status"] == "passed" for cell in cells.values()),
                    "cells": cells,
                    "conversations": len(learner.conversations),
                    "rejected": sum(1 for c in learner.conversations.values() if c.get("outcome")),
                    "verified": {name: entry for name, entry in learner.verified.items() if name in self.titles},
                }
            )
        counted = [
            {
                "rule": rule,
                "learners": len(entry["learners"]),
                "names": sorted(entry["learners"], key=str.casefold),
                "challenges": sorted(entry["challenges"]),
            }
            for rule, entry in rules.items()
        ]
        counted.sort(key=lambda item: (-int(str(item["learners"])), str(item["rule"])))
        queue.sort(key=lambda item: (float(str(item["since"])), str(item["name"]).casefold()))
        joined = {name_key(name) for name in self.learners}
        return {
            "now": now,
            "version": self.version,
            "stuck_runs": self.stuck_runs,
            "stuck_minutes": self.stuck_minutes,
            "challenges": [{"name": name, "title": title, **columns[name]} for name, title in self.titles.items()],
            "learners": rows,
            "rules": counted,
            "queue": queue,
            "waiting": sorted((name for key, name in self.roster.items() if key not in joined), key=str.casefold),
        }

    def detail(self, name: str) -> dict[str, Any] | None:
        """One learner: their latest failure as they saw it, and their conversations, newest first."""
        learner = self.learners.get(name)
        if learner is None:
            return None
        return {
            "name": learner.name,
            "latest_failure": learner.latest_failure,
            "conversations": list(reversed(learner.conversations.values())),
        }

    @staticmethod
    def progress(learner: Learner) -> dict[str, Any]:
        """What the store keeps of a learner between restarts: their cells and latest failure."""
        return {
            "last_run": learner.last_run,
            "latest_failure": learner.latest_failure,
            "cells": {challenge: dataclasses.asdict(cell) for challenge, cell in learner.cells.items()},
        }

    def restored(self, learner: Learner, progress: Mapping[str, Any] | None) -> Learner:
        """`learner` with the `progress` the store kept for them (see `progress`); the room unchanged."""
        if progress:
            learner.last_run = progress.get("last_run")
            learner.latest_failure = progress.get("latest_failure")
            for challenge, cell in progress.get("cells", {}).items():
                if challenge in self.titles:  # a challenge no longer in the catalogue is no column
                    signature = tuple((str(test), str(rule)) for test, rule in cell["signature"])
                    learner.cells[challenge] = Cell(**{**cell, "signature": signature})
        return learner
