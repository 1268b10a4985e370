"""The house style holds: ruff's lint and format, and mypy strict on the package (pyproject's settings)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    *("sandbox", "tests", "bench", "challenges", "solutions"),
    *("--extend-exclude", "challenges/*/exercise.py", "--extend-exclude", "tests/mutants/*_syntax_error"),
]
"""Everything but the learner's own exercise files, and the mutant whose point is a syntax error."""


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", *SOURCES],
        ["ruff", "format", "--check", *SOURCES],
        ["mypy", "sandbox"],
    ],
    ids=["ruff-check", "ruff-format", "mypy-strict"],
)
def test_code_passes(command: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout[-4000:]}{done.stderr[-2000:]}"
