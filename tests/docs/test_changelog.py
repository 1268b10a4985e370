"""One version number, and a changelog that speaks of it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

import sandbox

ROOT = Path(__file__).resolve().parents[2]


def test_the_version_is_pyprojects() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert sandbox.__version__ == project["version"]


def test_the_changelog_has_a_section_for_the_current_version() -> None:
    versions = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.MULTILINE)
    assert versions[0] == "Unreleased"
    assert sandbox.__version__ in versions
