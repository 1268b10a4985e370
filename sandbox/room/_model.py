"""What the room knows, in memory: learners by challenges, who is stuck, which rules are broken now.

May touch: nothing outside itself (no I/O, no clock of its own: every time is passed in). The store
is the durable copy; this is the view, restored from the store's progress rows at start-up and
updated as runs and conversations arrive, so that a page update costs a walk over memory rather
than a query.

A run is what one grader posted: per challenge the tallies, per failing test the rule and the
headline (and, for the first failure of each challenge, the feedback as the learner saw it).
`parse_run` checks a posted run's shape and bounds and says what is wrong in one sentence.
"""

from __future__ import annotations

import dataclasses
import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Cell", "Learner", "Room", "RoomInputError", "clean_name", "parse_run"]

MAX_NAME = 40


def clean_name(name: object) -> str | None:
    """A learner's name with its spaces tidied, or None when it is not one: 1 to 40 printable
    characters. Anything printable is allowed (names come in every script and shape), so markup in a
    name is possible, and the page escapes it like everything else a learner sends."""
    if not isinstance(name, str):
        return None
    name = " ".join(name.split())
    if not 0 < len(name) <= MAX_NAME or not name.isprintable():
        return None
    return name


CHALLENGE = re.compile(r"^[\w.-]{1,64}$")
MAX_CHALLENGES = 64
MAX_FAILURES = 200
MAX_RULE = 400
MAX_HEADLINE = 600
MAX_TEXT = 12_000
MAX_COUNT = 100_000
OWN_LOOP = "their own loop"
"""Where a rule broken by a learner's own loop (seen by the room's server) is counted."""
MAX_CONVERSATIONS = 12
"""Conversations kept per learner, newest first: enough to see what a loop is doing now."""


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


@dataclass
class Learner:
    name: str
    joined: float
    last_run: float | None = None
    cells: dict[str, Cell] = field(default_factory=dict)
    latest_failure: dict[str, Any] | None = None
    conversations: OrderedDict[str, dict[str, Any]] = field(default_factory=OrderedDict)


def _status(passed: int, failed: int, not_started: int, collected: int) -> str:
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


def _text(value: object, limit: int, what: str) -> str:
    if not isinstance(value, str):
        raise RoomInputError(f"{what} must be a string, got {type(value).__name__}.")
    return value[:limit]


def _count(value: object, what: str) -> int:
    if type(value) is not int or not 0 <= value <= MAX_COUNT:
        raise RoomInputError(f"{what} must be a whole number from 0 to {MAX_COUNT}, got {value!r:.40}.")
    return value


def parse_run(data: object) -> dict[str, Any]:
    """A posted run, checked and trimmed to the room's bounds: the only shape the store ever keeps."""
    if not isinstance(data, Mapping):
        raise RoomInputError("a run is a JSON object with `challenges` and `failures`.")
    challenges = data.get("challenges")
    if not isinstance(challenges, Mapping) or not challenges:
        raise RoomInputError("`challenges` must be an object: challenge name -> {passed, failed, not_started}.")
    if len(challenges) > MAX_CHALLENGES:
        raise RoomInputError(f"a run holds at most {MAX_CHALLENGES} challenges, got {len(challenges)}.")
    tallies: dict[str, dict[str, int]] = {}
    for name, tally in challenges.items():
        if not CHALLENGE.match(str(name)):
            raise RoomInputError(f"challenge name {str(name)[:70]!r}: use the folder's name, e.g. 02_bounded_loop.")
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
        challenge = _text(failure.get("challenge"), 64, f"failures[{index}].challenge")
        if challenge not in tallies:
            raise RoomInputError(f"failures[{index}].challenge {challenge!r} is not one of the run's challenges.")
        kept.append(
            {
                "challenge": challenge,
                "test": _text(failure.get("test", ""), 200, f"failures[{index}].test"),
                "rule": _text(failure.get("rule", ""), MAX_RULE, f"failures[{index}].rule"),
                "headline": _text(failure.get("headline", ""), MAX_HEADLINE, f"failures[{index}].headline"),
                "text": _text(failure.get("text", ""), MAX_TEXT, f"failures[{index}].text"),
            }
        )
    source = data.get("source", "pytest")
    if source not in ("pytest", "grade"):
        raise RoomInputError("`source` is `pytest` or `grade`.")
    return {"source": source, "challenges": tallies, "failures": kept}


_COUNTS = ("passed", "failed", "not_started", "collected")


class Room:
    """The room's state. Not thread-safe: the room's event loop owns it."""

    def __init__(self, *, titles: Mapping[str, str] | None = None, stuck_runs: int = 3, stuck_minutes: float = 10):
        self.titles = dict(titles or {})
        """Challenge name -> title, for the columns (from the challenges folder, when the room has one)."""
        self.stuck_runs = stuck_runs
        self.stuck_minutes = stuck_minutes
        self.learners: dict[str, Learner] = {}
        self.version = 0
        """Counts every change: the page's stream sends a new snapshot when it moves."""

    def join(self, name: str, joined: float) -> None:
        self.learners.setdefault(name, Learner(name, joined))
        self.version += 1

    def leave(self, name: str) -> None:
        self.learners.pop(name, None)
        self.version += 1

    def apply_run(self, name: str, at: float, run: Mapping[str, Any]) -> None:
        learner = self.learners.setdefault(name, Learner(name, at))
        learner.last_run = at
        by_challenge: dict[str, list[Mapping[str, str]]] = {}
        for failure in run["failures"]:
            by_challenge.setdefault(failure["challenge"], []).append(failure)
        for challenge, counts in run["challenges"].items():
            failed = by_challenge.get(challenge, [])
            status = _status(counts["passed"], counts["failed"], counts["not_started"], counts["collected"])
            signature = tuple(sorted((f["test"], f["rule"] or f["headline"]) for f in failed))
            before = learner.cells.get(challenge)
            streak = before.streak + 1 if before and status == "failing" and before.signature == signature else 1
            rules = sorted({f["rule"] for f in failed if f["rule"]})
            learner.cells[challenge] = Cell(status, counts["passed"], counts["collected"], at, rules, signature, streak)
            if failed:
                first = next((f for f in failed if f["text"]), failed[0])
                learner.latest_failure = {**first, "at": at}
        self.version += 1

    def put_conversation(self, name: str, key: str, conversation: dict[str, Any]) -> str | None:
        """Keep a conversation under its learner; returns the key of one dropped to stay in bounds."""
        learner = self.learners.get(name)
        if learner is None:
            return None
        learner.conversations.pop(key, None)
        learner.conversations[key] = conversation
        self.version += 1
        if len(learner.conversations) > MAX_CONVERSATIONS:
            dropped, _ = learner.conversations.popitem(last=False)
            return dropped
        return None

    # -- what the page shows ----------------------------------------------------------------------

    def challenges(self) -> list[str]:
        seen = set(self.titles)
        for learner in self.learners.values():
            seen.update(learner.cells)
        return sorted(seen)

    def idle(self, learner: Learner, now: float) -> bool:
        """No run for `stuck_minutes`, while something is left to pass."""
        since = learner.last_run if learner.last_run is not None else learner.joined
        finished = bool(learner.cells) and all(cell.status == "passed" for cell in learner.cells.values())
        return not finished and now - since >= self.stuck_minutes * 60

    def snapshot(self, now: float) -> dict[str, Any]:
        """Everything the instructor's table shows, as plain JSON: the page renders it, the stream sends it."""
        rows = []
        rules: dict[str, dict[str, set[str]]] = {}
        for learner in sorted(self.learners.values(), key=lambda item: item.name.casefold()):
            cells = {}
            for challenge, cell in learner.cells.items():
                stuck = cell.status == "failing" and cell.streak >= self.stuck_runs
                cells[challenge] = {
                    "status": cell.status,
                    "passed": cell.passed,
                    "total": cell.total,
                    "at": cell.at,
                    "streak": cell.streak,
                    "stuck": stuck,
                    "rules": cell.rules,
                }
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
            idle = self.idle(learner, now)
            rows.append(
                {
                    "name": learner.name,
                    "last_run": learner.last_run,
                    "idle": idle,
                    "stuck": idle or any(cell["stuck"] for cell in cells.values()),
                    "passed": sum(cell["status"] == "passed" for cell in cells.values()),
                    "cells": cells,
                    "conversations": len(learner.conversations),
                    "rejected": sum(1 for c in learner.conversations.values() if c.get("outcome")),
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
        return {
            "now": now,
            "version": self.version,
            "stuck_runs": self.stuck_runs,
            "stuck_minutes": self.stuck_minutes,
            "challenges": [{"name": name, "title": self.titles.get(name, "")} for name in self.challenges()],
            "learners": rows,
            "rules": counted,
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

    def progress(self, name: str) -> dict[str, Any]:
        """What the store keeps of a learner between restarts: their cells and latest failure."""
        learner = self.learners[name]
        return {
            "last_run": learner.last_run,
            "latest_failure": learner.latest_failure,
            "cells": {challenge: dataclasses.asdict(cell) for challenge, cell in learner.cells.items()},
        }

    def restore(self, name: str, progress: Mapping[str, Any]) -> None:
        learner = self.learners.get(name)
        if learner is None:
            return
        learner.last_run = progress.get("last_run")
        learner.latest_failure = progress.get("latest_failure")
        for challenge, cell in progress.get("cells", {}).items():
            signature = tuple((str(test), str(rule)) for test, rule in cell["signature"])
            learner.cells[challenge] = Cell(**{**cell, "signature": signature})
        self.version += 1
