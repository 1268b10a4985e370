"""The challenge set on disk: numbered folders under `challenges/`, described by one `hints.toml`.

    challenges/
        hints.toml                      title, lesson rule and hints of every challenge, in order
        01_apply_tool_results/
            README.md  exercise.py  test_apply_tool_results.py

Both the pytest plugin and the CLI read the set from here, so they always agree on names and order.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = [
    "HINTS_FILE",
    "ChallengeInfo",
    "ChallengeRef",
    "challenge_folder",
    "find_root",
    "load_challenges",
    "select",
]

HINTS_FILE = "hints.toml"
ROOT_NAME = "challenges"
_FOLDER = re.compile(r"^(\d{2})_[A-Za-z0-9_]+$")


@dataclass(frozen=True)
class ChallengeRef:
    """The challenge a test grades: its name, and the folder its `exercise.py` sits in."""

    name: str
    folder: Path


@dataclass(frozen=True)
class ChallengeInfo:
    """One challenge folder and its metadata."""

    name: str
    """The folder name, `01_apply_tool_results`: also the `--impl DIR/<name>.py` file name."""
    folder: Path
    title: str = ""
    rule: str = ""
    """The lesson's rule this challenge teaches."""
    hints: tuple[str, ...] = ()
    """The hints for a Python learner, in the order `sandbox hint` reveals them."""
    program_hints: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """The same hints for a program in another language: (`go`, hints), (`js`, hints)."""

    def hints_for(self, language: str) -> tuple[str, ...]:
        """The hints written for `language` (`python`, `go`, `js`); Python's for any other."""
        return dict(self.program_hints).get(language, self.hints)

    @property
    def number(self) -> int:
        return int(self.name[:2])

    @property
    def exercise(self) -> Path:
        return self.folder / "exercise.py"


def challenge_folder(path: Path) -> Path | None:
    """The challenge folder a test file belongs to: `challenges/NN_name/` directly above it."""
    folder = path.parent
    if _FOLDER.match(folder.name) and folder.parent.name == ROOT_NAME:
        return folder
    return None


def find_root(start: Path) -> Path | None:
    """The `challenges/` folder at or above `start` (or `start` itself when it is one)."""
    start = start.resolve()
    for place in (start, *start.parents):
        if place.name == ROOT_NAME and (place / HINTS_FILE).is_file():
            return place
        candidate = place / ROOT_NAME
        if (candidate / HINTS_FILE).is_file():
            return candidate
    return None


def load_challenges(root: Path) -> list[ChallengeInfo]:
    """Every challenge folder under `root`, in order, with what `hints.toml` says about it."""
    meta = _read_hints(root / HINTS_FILE)
    found = []
    for folder in sorted(root.iterdir()):
        if folder.is_dir() and _FOLDER.match(folder.name):
            entry = meta.get(folder.name, {})
            found.append(
                ChallengeInfo(
                    name=folder.name,
                    folder=folder,
                    title=str(entry.get("title", "")),
                    rule=str(entry.get("rule", "")),
                    hints=_texts(entry.get("hints")),
                    program_hints=tuple(
                        (language, _texts(entry[f"{language}_hints"]))
                        for language in ("go", "js")
                        if f"{language}_hints" in entry
                    ),
                )
            )
    return found


def _texts(value: object) -> tuple[str, ...]:
    return tuple(str(text) for text in value) if isinstance(value, list) else ()


def _read_hints(path: Path) -> dict[str, dict[str, object]]:
    if not path.is_file():
        return {}
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    entries = data.get("challenge", [])
    return {str(entry["name"]): entry for entry in entries if isinstance(entry, dict) and "name" in entry}


def select(challenges: Sequence[ChallengeInfo], wanted: str) -> ChallengeInfo:
    """The challenge `wanted` names: `2`, `02`, `02_bounded_loop` or `bounded_loop`.

    Raises LookupError with a message listing the choices.
    """
    text = wanted.strip().rstrip("/\\").split("/")[-1].split("\\")[-1]
    for challenge in challenges:
        numbered = text.isascii() and text.isdigit()  # '²' is a digit to isdigit, and no number to int
        if text in (challenge.name, challenge.name[3:]) or (numbered and int(text) == challenge.number):
            return challenge
    choices = "\n".join(f"- {challenge.number}: {challenge.name}" for challenge in challenges)
    raise LookupError(f"No challenge {wanted!r}. The challenges are:\n{choices}")
