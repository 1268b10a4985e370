"""Learner text made safe to show: in reports, JUnit, the terminal and the room.

Whatever learner code prints, raises or sends is hostile text: a lone surrogate cannot be encoded as
UTF-8 (a report writer or the terminal would crash on it), and a control character can redraw the
instructor's terminal. `escaped` is the one rule for both, applied where learner text leaves the
grader. Touches nothing but its argument.
"""

from __future__ import annotations

import re

__all__ = ["escaped"]

_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
"""Control characters (all but newline and tab), and surrogates, which UTF-8 cannot carry."""


def escaped(text: str) -> str:
    """`text` with each control character but newline and tab, and each surrogate, written as its
    Python escape (`\\x1b`, `\\r`, `\\ud800`); a Windows line end (`\\r\\n`) is a newline."""
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(_escape, text.replace("\r\n", "\n"))


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape", "backslashreplace").decode("ascii")
