"""What a grader sends the room about a failure: its rule, its headline, and its text without the learner's code.

May touch: nothing (pure functions over feedback text and verdicts). Shared by the pytest hook
(`_plugin`) and `sandbox grade --room`, which runs in the judge's process as pytest's hook does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

__all__ = ["grade_run", "rule_of", "scrub"]

_SOURCE_LINE = re.compile(r'^(\s*)File "([^"]*)", line \d+, in .*$')
_RULE = re.compile(r"^Rule: (.*)$")


def scrub(text: str) -> str:
    """`text` without the learner's source: each traceback frame keeps its `File ..., line N` line
    (the file's name only) and loses the line of code under it."""
    out: list[str] = []
    drop_next = False
    for line in text.splitlines():
        if drop_next and line.strip():
            drop_next = False
            out.append(line[: len(line) - len(line.lstrip())] + "[your code: not sent to the room]")
            continue
        frame = _SOURCE_LINE.match(line)
        drop_next = frame is not None
        if frame is not None:  # the file's name, not where it sits on the learner's disk
            line = line.replace(frame.group(2), frame.group(2).replace("\\", "/").rsplit("/", 1)[-1], 1)
        out.append(line)
    return "\n".join(out)


def rule_of(text: str) -> str:
    """The lesson's rule a feedback text states (its `Rule: ` line and the lines wrapped under it)."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        found = _RULE.match(line)
        if found is None:
            continue
        parts = [found.group(1)]
        for more in lines[index + 1 :]:
            if not more.startswith("      ") or not more.strip():
                break
            parts.append(more.strip())
        return " ".join(parts)
    return ""


class _Case(Protocol):
    challenge: str

    @property
    def nodeid(self) -> str: ...


def grade_run(planned: Sequence[_Case], outcomes: Mapping[str, tuple[str, str]]) -> dict[str, Any]:
    """A `sandbox grade` run as the room takes it: tallies per challenge, and per failing case the
    rule and headline (the first failure of each challenge with its feedback, scrubbed)."""
    challenges: dict[str, dict[str, int]] = {}
    failures: list[dict[str, str]] = []
    texted: set[str] = set()
    for item in planned:
        tally = challenges.setdefault(item.challenge, {"passed": 0, "failed": 0, "not_started": 0, "collected": 0})
        tally["collected"] += 1
        if item.nodeid not in outcomes:
            continue
        outcome, output = outcomes[item.nodeid]
        tally["passed" if outcome == "passed" else "not_started" if outcome == "not started" else "failed"] += 1
        if outcome != "failed" or len(failures) >= 200:
            continue
        failures.append(
            {
                "challenge": item.challenge,
                "test": item.nodeid.split("::", 1)[-1][:200],
                "rule": rule_of(output),
                "headline": output.strip().split("\n", 1)[0],
                "text": "" if item.challenge in texted else scrub(output),
            }
        )
        texted.add(item.challenge)
    return {"source": "grade", "challenges": challenges, "failures": failures}
