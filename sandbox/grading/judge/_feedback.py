"""Failure messages that teach: what happened, the conversation as sent, the provider's words, the
lesson's rule and a hint. Shown with `pytest.fail(..., pytrace=False)`: the learner reads the
lesson, not the grader's stack."""

from __future__ import annotations

import re
import textwrap
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import pytest

from ..boundary._marshal import learner_frames
from ._language import current_language, translate
from ._lessons import Lesson

__all__ = ["NOT_STARTED_MARK", "Feedback", "NotStarted", "Verdict", "learner_traceback", "mistake_of"]

_WIDTH = 100


class NotStarted(pytest.fail.Exception):  # type: ignore[misc,name-defined]
    """The implementation still raises NotImplementedError: reported as "not started", in one line."""


NOT_STARTED_MARK = "sandbox_not_started"
"""The attribute set on a test's report when it raised `NotStarted`: it travels with the report, from a
second grading lane too (`_lanes`), to what counts and shows outcomes."""


class Verdict(pytest.fail.Exception):  # type: ignore[misc,name-defined]
    """A grading failure that knows which mistake it reports, so the run can show each mistake once."""

    def __init__(self, text: str, mistake: str) -> None:
        super().__init__(text, pytrace=False)
        self.mistake = mistake
        """What stays the same when one mistake fails many tests: the headline without its scenario,
        provider, numbers, ids and quoted values, and the lesson's rule (see `_grouping`)."""


@dataclass
class Feedback:
    """One failure, in the order a learner needs it."""

    headline: str
    details: list[str] = field(default_factory=list)
    transcript_title: str = ""
    transcript: Sequence[str] = ()
    provider: str = ""
    """The provider's error, verbatim."""
    lesson: Lesson | None = None

    def render(self) -> str:
        """The feedback, in the names of the language it is written for (`_language.speaking`): the
        transcript and the provider's own words stay as they were."""
        language = current_language()

        def names(text: str) -> str:
            return translate(text, language)

        out = [names(self.headline), *map(names, self.details)]
        if self.transcript:
            out += ["", f"{self.transcript_title}:", *self.transcript]
        if self.provider or self.lesson:
            out.append("")
        if self.provider:
            out.append(f"Provider said: {self.provider}")
        if self.lesson:
            out += _wrapped("Rule: ", names(self.lesson.rule)) + _wrapped("Hint: ", names(self.lesson.hint))
        return "\n".join(out)

    def fail(self) -> NoReturn:
        __tracebackhide__ = True
        raise Verdict(self.render(), mistake_of(self.headline, self.lesson.rule if self.lesson else ""))


def _wrapped(label: str, text: str) -> list[str]:
    return textwrap.wrap(text, _WIDTH, initial_indent=label, subsequent_indent=" " * len(label))


def learner_traceback(error: BaseException, source: Path) -> list[str]:
    """The exception, with only the frames from the learner's own file (where the fix will be)."""
    frames = learner_frames(error, source)
    lines = [line.rstrip() for line in traceback.format_list(frames[-4:])]
    summary = traceback.format_exception_only(type(error), error)[-1].strip()
    return [*(line for chunk in lines for line in chunk.splitlines()), summary]


_VARIABLE = [
    (re.compile(r"scenario '[^']*' on [\w-]+"), "SCENARIO"),
    (re.compile(r'"[^"]*"'), '""'),
    (re.compile(r"'[^']*'"), "''"),
    (re.compile(r"\[[^\]]*\]"), "[]"),
    (re.compile(r"\b[\w.-]+\([^()]*\)"), "CALL()"),
    (re.compile(r"\b(?:first|second|third|fourth|fifth|sixth)\b"), "NTH"),
    (re.compile(r"[\w-]*\d[\w-]*"), "N"),
]


def mistake_of(headline: str, rule: str) -> str:
    """The kind of mistake a failure reports: its headline with everything that varies from case to
    case (scenario, provider, counts, ids, calls, quoted values) taken out, and the lesson's rule."""
    shape = headline.splitlines()[0] if headline else ""
    for pattern, replacement in _VARIABLE:
        shape = pattern.sub(replacement, shape)
    return " ".join(shape.split()) + " | " + rule
