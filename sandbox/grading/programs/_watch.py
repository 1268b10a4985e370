"""`sandbox watch [N] -- CMD`: build and grade a program again each time one of its source files is saved.

The program's folder is polled for the modification times of its source files (by suffix, so the
binary a build writes, a report or a cache never counts as a save); hidden folders and dependency
folders (`node_modules`, `vendor`, `target`) are skipped. Touches nothing: it reads the folder's
listing and file times, and hands each grade to the caller.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["SOURCE_SUFFIXES", "sources", "watch"]

SOURCE_SUFFIXES = frozenset(
    {".go", ".mod", ".sum", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".py", ".rs", ".c", ".h", ".cc"}
    | {".cpp", ".hpp", ".java", ".kt", ".rb", ".cs", ".swift", ".zig", ".php", ".lua", ".ex", ".exs", ".sh"}
)
"""What a save of the program's source looks like; a build's output has another suffix, or none."""
_SKIPPED = frozenset({"node_modules", "vendor", "target", "__pycache__", "dist", "build"})
MAX_FILES = 20_000
"""Files looked at per poll at most: a folder bigger than this is not one program's source."""


def sources(folder: Path) -> dict[str, int]:
    """Each source file under `folder` (path relative to it) and its modification time in ns."""
    found: dict[str, int] = {}
    for directory, folders, files in os.walk(folder):
        folders[:] = sorted(name for name in folders if not name.startswith(".") and name not in _SKIPPED)
        for name in files:
            if os.path.splitext(name)[1] not in SOURCE_SUFFIXES:
                continue
            path = os.path.join(directory, name)
            try:
                found[os.path.relpath(path, folder)] = os.stat(path).st_mtime_ns
            except OSError:  # replaced while we looked (an editor's save): caught next time round
                continue
            if len(found) >= MAX_FILES:
                return found
    return found


def watch(
    grade: Callable[[Callable[[], None]], object],
    folder: Path,
    *,
    interval: float,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Call `grade(built)` now, then again after each poll that finds a source file saved, added or
    removed; until interrupted (KeyboardInterrupt). `grade` calls `built()` once its build is done:
    what the build wrote is no save, and a save made after it, while the cases run, is seen next."""
    seen = sources(folder)

    def built() -> None:
        nonlocal seen
        seen = sources(folder)

    grade(built)
    while True:
        sleep(interval)
        now = sources(folder)
        if now != seen:
            seen = now
            grade(built)
