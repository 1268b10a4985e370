"""Learner text leaves the grader escaped: one rule for every report, the terminal and the room."""

from __future__ import annotations

import pytest

from sandbox.grading.boundary._text import escaped


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("plain text, été, 東京, 🙂", "plain text, été, 東京, 🙂"),
        ("kept:\n\tindented", "kept:\n\tindented"),
        ("\x1b[2J\x1b[H10/10 challenges passed", "\\x1b[2J\\x1b[H10/10 challenges passed"),
        ("over\rwritten, a line end\r\n", "over\\rwritten, a line end\n"),
        ("a lone \ud800 surrogate", "a lone \\ud800 surrogate"),
        ("\x00\x07\x7f\x9b", "\\x00\\x07\\x7f\\x9b"),
    ],
    ids=["unicode", "newline-and-tab", "ansi", "carriage-return", "surrogate", "c0-del-c1"],
)
def test_escaped_shows_control_characters_and_surrogates_as_escapes(given: str, expected: str) -> None:
    assert escaped(given) == expected
    escaped(given).encode("utf-8")  # always writable as UTF-8
