"""The grader's side of the room for `pytest challenges/`: `--room URL --name NAME` (or the
`SANDBOX_ROOM` and `SANDBOX_ROOM_NAME` environment variables, which `sandbox check` and `watch`
pass on to the pytest they run).

May touch: the pytest run's reports (read only) and the `RoomLink`. Registered by the sandbox's
plugin only for a run that grades challenges with a room named. It posts, per challenge, the
tallies and, per failing test, the lesson's rule and the failure's headline; for the first failure
of each challenge, the feedback text as the learner saw it, with every line of the learner's own
source taken out of its traceback. Never the learner's code. It runs in pytest's process (the
judge), never in the worker that runs learner code, after every verdict is final.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Mapping
from typing import Any

import pytest

from .. import NotStarted
from ._feedback import NOT_STARTED_MARK
from ._room_graded import scrub
from ._room_link import ROOM_ENV, ROOM_NAME_ENV, RoomLink

__all__ = ["RoomReporter", "reporter_for"]


def reporter_for(config: pytest.Config, challenge_of: Mapping[str, str]) -> RoomReporter | None:
    url = config.getoption("sandbox_room") or os.environ.get(ROOM_ENV)
    if not url:
        return None
    name = config.getoption("sandbox_room_name") or os.environ.get(ROOM_NAME_ENV)
    return RoomReporter(url, name, challenge_of)


class RoomReporter:
    """A pytest plugin object: records each challenge test's outcome, and posts the run at the end."""

    def __init__(self, url: str, name: str | None, challenge_of: Mapping[str, str]) -> None:
        self.challenge_of = dict(challenge_of)
        self.link = RoomLink(url, name) if name else None
        self.problem = None if name else f"--room {url} needs --name NAME (or ${ROOM_NAME_ENV})"
        self.outcomes: dict[str, str] = {}
        self.failures: dict[str, dict[str, str]] = {}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        challenge = self.challenge_of.get(item.nodeid)
        if challenge is None or not report.failed:
            return report
        error = call.excinfo.value if call.excinfo is not None else None
        if isinstance(error, NotStarted):
            return report
        mistake = getattr(error, "mistake", None)
        text = report.longreprtext
        if isinstance(mistake, str):  # a grader's verdict: its rule, and its feedback, scrubbed
            headline, rule, shown = text.strip().split("\n", 1)[0], mistake.partition(" | ")[2], scrub(text)
        else:  # a crash or an error outside the verdicts: its one-line summary only
            headline = call.excinfo.exconly().split("\n", 1)[0] if call.excinfo is not None else "error"
            rule, shown = "", ""
        # On the report, read back by pytest_runtest_logreport: it travels with it from a second grading lane.
        vars(report)["sandbox_room_failure"] = {
            "challenge": challenge,
            "test": item.nodeid.rsplit("::", 1)[-1],
            "rule": rule,
            "headline": headline,
            "text": shown,
        }
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.nodeid not in self.challenge_of:
            return
        failure = getattr(report, "sandbox_room_failure", None)
        if isinstance(failure, dict):
            self.failures.setdefault(report.nodeid, failure)
        if report.when == "call":
            if getattr(report, NOT_STARTED_MARK, False):
                self.outcomes[report.nodeid] = "not started"
            else:
                self.outcomes[report.nodeid] = "passed" if report.passed else "failed"
        elif report.failed or (report.when == "setup" and report.skipped):
            self.outcomes[report.nodeid] = "failed"

    def run(self) -> dict[str, Any]:
        challenges: dict[str, dict[str, int]] = {}
        for nodeid, challenge in self.challenge_of.items():
            tally = challenges.setdefault(challenge, {"passed": 0, "failed": 0, "not_started": 0, "collected": 0})
            tally["collected"] += 1
            outcome = self.outcomes.get(nodeid)
            if outcome is not None:
                tally[outcome.replace(" ", "_")] += 1
        failures, texted = [], set()
        for nodeid, failure in self.failures.items():
            if self.outcomes.get(nodeid) != "failed":
                continue
            entry = dict(failure)
            if entry["challenge"] in texted:
                entry["text"] = ""  # one feedback text per challenge: the room shows the latest
            texted.add(entry["challenge"])
            failures.append(entry)
        ran = {
            name: tally
            for name, tally in challenges.items()
            if tally["passed"] + tally["failed"] + tally["not_started"]
        }
        return {"source": "pytest", "challenges": ran, "failures": failures[:200]}

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        run = self.run()
        if self.link is not None and run["challenges"]:
            self.link.post(run)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.problem:
            terminalreporter.write_line(f"room: {self.problem}; grading went on without it.")
        elif self.link is not None:
            self.link.finish(terminalreporter.write_line)
