"""Progress kept between runs in `challenges/.sandbox-state.json` (gitignored): hints revealed, and
the last grade of each challenge with a digest of the file graded, so `sandbox list` re-grades only
what changed since."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["STATE_FILE", "State", "digest", "write_json"]

STATE_FILE = ".sandbox-state.json"
_VERSION = 1


def digest(path: Path) -> str:
    """The content hash of a graded file; a missing file has none."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def write_json(path: Path, data: Any) -> None:
    """Write through a temporary file and a rename, so a reader (or a crash) never sees half a file."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temporary, path)


class State:
    """The state file of one challenge set. Load, change, `save()`; an unreadable file starts over."""

    def __init__(self, root: Path) -> None:
        self.path = root / STATE_FILE
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        if not isinstance(data, dict) or data.get("version") != _VERSION:
            data = {}
        self.hints: dict[str, int] = dict(data.get("hints", {}))
        self.results: dict[str, dict[str, Any]] = dict(data.get("results", {}))

    def save(self) -> None:
        write_json(self.path, {"version": _VERSION, "hints": self.hints, "results": self.results})

    def result(self, name: str, exercise: Path) -> dict[str, Any] | None:
        """The last grade of `name`, if the exercise has not changed since."""
        result = self.results.get(name)
        if result is None or result.get("digest") != digest(exercise):
            return None
        return result
