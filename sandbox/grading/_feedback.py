"""Failure messages that teach: what happened, the conversation as sent, the provider's words, the
lesson's rule and a hint. Shown with `pytest.fail(..., pytrace=False)`: the learner reads the
lesson, not the grader's stack."""

from __future__ import annotations

import textwrap
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

import pytest

from ._lessons import Lesson
from ._marshal import learner_frames

__all__ = ["Feedback", "NotStarted", "learner_traceback"]

_WIDTH = 100


class NotStarted(pytest.fail.Exception):  # type: ignore[misc,name-defined]
    """The implementation still raises NotImplementedError: reported as "not started", in one line."""


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
        out = [self.headline, *self.details]
        if self.transcript:
            out += ["", f"{self.transcript_title}:", *self.transcript]
        if self.provider or self.lesson:
            out.append("")
        if self.provider:
            out.append(f"Provider said: {self.provider}")
        if self.lesson:
            out += _wrapped("Rule: ", self.lesson.rule) + _wrapped("Hint: ", self.lesson.hint)
        return "\n".join(out)

    def fail(self) -> NoReturn:
        __tracebackhide__ = True
        pytest.fail(self.render(), pytrace=False)


def _wrapped(label: str, text: str) -> list[str]:
    return textwrap.wrap(text, _WIDTH, initial_indent=label, subsequent_indent=" " * len(label))


def learner_traceback(error: BaseException, source: Path) -> list[str]:
    """The exception, with only the frames from the learner's own file (where the fix will be)."""
    frames = learner_frames(error, source)
    lines = [line.rstrip() for line in traceback.format_list(frames[-4:])]
    summary = traceback.format_exception_only(type(error), error)[-1].strip()
    return [*(line for chunk in lines for line in chunk.splitlines()), summary]
