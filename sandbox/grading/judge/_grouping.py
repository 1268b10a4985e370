"""One mistake, shown once: the terminal groups the failures of a challenge that report the same mistake.

A loop with one bug fails most of its challenge's tests, on every wire format and scenario, with
near-identical feedback; a learner reads the first and scrolls past the rest. So the FAILURES
section shows the first failure of each mistake in full, followed by one line per test function
naming the other cases:

    The same mistake in 23 more tests (each in full in --report and --junitxml):
      test_finishes_the_task: single_call, multi_step on openai, openai-responses, anthropic, gemini

"The same mistake" is the same challenge and the same `Verdict.mistake` (the headline without what
varies from case to case, and the lesson's rule); a failure that is not a grader's verdict (an
import error, a crash) is keyed by its first line, shaped the same way.

Only the terminal is changed, and only while it prints its summary: every report keeps its full
text, which JUnit XML and `--report` have already recorded, and the counts stay the real ones.

The short summary gives each shown failure its headline alone. pytest prints a failure's whole crash
message there when it runs on CI (`CI` or `BUILD_NUMBER` set), and a grader's message is the whole
feedback: GitHub Classroom and Gradescope would show every transcript twice.
"""

from __future__ import annotations

import copy
import textwrap
from collections.abc import Collection, Generator, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest

from ...wire import PROVIDERS
from ._feedback import mistake_of

__all__ = ["FailureGroups", "group_failures", "same_mistake_lines"]


@dataclass
class _Group:
    first: pytest.TestReport
    others: list[str] = field(default_factory=list)
    """Node ids of the other failures, in run order."""


class FailureGroups:
    """A pytest plugin, registered for a run that grades challenges."""

    def __init__(self, challenge_of: dict[str, str]) -> None:
        self._challenge_of = challenge_of
        """Node id -> challenge name, for the challenge tests of this run."""
        self._mistakes: dict[str, tuple[str, str]] = {}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        challenge = self._challenge_of.get(item.nodeid)
        if challenge is not None and report.failed and call.excinfo is not None:
            mistake = getattr(call.excinfo.value, "mistake", None)
            if not isinstance(mistake, str):
                mistake = mistake_of(report.longreprtext.strip(), "")
            vars(report)["sandbox_mistake"] = mistake  # on the report: it travels with it from a second lane
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        challenge = self._challenge_of.get(report.nodeid)
        mistake = getattr(report, "sandbox_mistake", None)
        if challenge is not None and isinstance(mistake, str):
            self._mistakes.setdefault(report.nodeid, (challenge, mistake))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None, None, None]:
        """Around the terminal's own summary: its FAILURES and short summary see one report per
        mistake; the statistics line that follows sees them all again."""
        stats: dict[str, list[Any]] = terminalreporter.stats
        failed = stats.get("failed")
        if failed:
            stats["failed"] = self._grouped(failed)
        try:
            return (yield)
        finally:
            if failed:
                stats["failed"] = failed

    def _grouped(self, reports: list[Any]) -> list[Any]:
        groups: dict[tuple[str, str], _Group] = {}
        shown: list[Any] = []
        for report in reports:
            key = self._mistakes.get(getattr(report, "nodeid", ""))
            if key is None or report.when != "call":
                shown.append(report)
            elif key in groups:
                groups[key].others.append(report.nodeid)
            else:
                groups[key] = _Group(report)
                shown.append(report)
        others = {id(group.first): group.others for group in groups.values()}
        return [_as_shown(report, others[id(report)]) if id(report) in others else report for report in shown]


@dataclass(frozen=True)
class _Crash:
    message: str


class _Shown:
    """A failure's text as the terminal shows it: in full in FAILURES, by its headline in the short
    summary (which reads `reprcrash.message`)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.reprcrash = _Crash(text.split("\n", 1)[0])

    def toterminal(self, out: Any) -> None:
        out.line(self.text)

    def __str__(self) -> str:
        return self.text


def _as_shown(report: pytest.TestReport, others: Collection[str]) -> pytest.TestReport:
    """A copy of `report` whose text ends with the other cases of its mistake, if there are any."""
    text = report.longreprtext.rstrip()
    if others:
        text += "\n\n" + "\n".join(same_mistake_lines(others))
    shown = copy.copy(report)
    shown.longrepr = _Shown(text)  # type: ignore[assignment]
    return shown


def group_failures(failures: Iterable[tuple[str, str, str]]) -> list[tuple[str, str, list[str]]]:
    """`(challenge, nodeid, text)` failures, in run order, as `(nodeid, text, other nodeids)`: the first
    failure of each mistake (`mistake_of` its headline and its `Rule:` line, within its challenge) with
    the node ids of the others, as the pytest run groups them."""
    groups: dict[tuple[str, str], tuple[str, str, list[str]]] = {}
    for challenge, nodeid, text in failures:
        rule = next((line for line in text.splitlines() if line.startswith("Rule: ")), "")
        key = (challenge, mistake_of(text.strip(), rule))
        if key in groups:
            groups[key][2].append(nodeid)
        else:
            groups[key] = (nodeid, text, [])
    return list(groups.values())


def same_mistake_lines(nodeids: Collection[str], width: int | None = None) -> list[str]:
    """`The same mistake in N more tests`, then one line per test function: its other scenarios and
    the wire formats they failed on; with `width`, each wrapped to it."""
    cases: dict[str, tuple[list[str], list[str]]] = {}
    for nodeid in nodeids:
        name = nodeid.rsplit("::", 1)[-1]
        function, _, params = name.partition("[")
        others, providers = cases.setdefault(function, ([], []))
        rest, provider = _split_provider(params.rstrip("]"))
        if rest and rest not in others:
            others.append(rest)
        if provider and provider not in providers:
            providers.append(provider)
    count = len(nodeids)
    plural = "s" if count != 1 else ""
    lines = [f"The same mistake in {count} more test{plural} (each in full in --report and --junitxml):"]
    for function, (others, providers) in cases.items():
        where = f": {', '.join(others)}" if others else ""
        ordered = [provider for provider in PROVIDERS if provider in providers]
        on = f" on {', '.join(ordered)}" if ordered else ""
        lines.append(f"  {function}{where}{on}")
    if width is None:
        return lines
    return [wrapped for line in lines for wrapped in textwrap.wrap(line, width, subsequent_indent="      ")]


def _split_provider(params: str) -> tuple[str, str]:
    """`parallel_calls-openai-responses` -> (`parallel_calls`, `openai-responses`)."""
    for provider in sorted(PROVIDERS, key=len, reverse=True):
        if params == provider:
            return "", provider
        if params.endswith("-" + provider):
            return params[: -len(provider) - 1], provider
    return params, ""
