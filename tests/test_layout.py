"""The package's shape holds where import-linter cannot see it: every package says what it is and what
it may touch, and grading's modules stay small. The import rules themselves (layers, grading's trust
zones, no circles) are import-linter contracts in pyproject.toml, checked by `lint-imports` in CI."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "sandbox"
PACKAGES = sorted(path.parent for path in PACKAGE.rglob("__init__.py"))
GRADING_ZONES = ("judge", "learner", "boundary", "programs")
LINES = 400


@pytest.mark.parametrize("package", PACKAGES, ids=lambda path: path.relative_to(PACKAGE.parent).as_posix())
def test_each_package_says_what_it_is(package: Path) -> None:
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
    assert docstring, f"{package.relative_to(PACKAGE.parent)}/__init__.py needs a docstring saying what it holds"


@pytest.mark.parametrize("zone", GRADING_ZONES)
def test_each_grading_zone_says_what_it_may_import(zone: str) -> None:
    docstring = ast.get_docstring(ast.parse((PACKAGE / "grading" / zone / "__init__.py").read_text(encoding="utf-8")))
    assert docstring and "import" in docstring, f"sandbox/grading/{zone}/__init__.py must say what it may import"


def test_grading_modules_stay_small() -> None:
    long = {
        str(path.relative_to(PACKAGE.parent)): lines
        for path in (PACKAGE / "grading").rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > LINES
    }
    assert not long, f"modules over {LINES} lines (split them by concern): {long}"
