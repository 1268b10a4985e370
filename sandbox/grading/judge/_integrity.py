"""What the grader judges with stays what it was: loaded before learner code runs, checked after.

At the start of a run the grader loads everything it judges with (the scenario catalogue, its own
modules, hypothesis's strategies) and keeps the bytes of the package and of the challenges folder,
and the list of files that would load into a later run: `conftest.py`, pytest's ini files, and the
`.pth` files of the interpreter's site-packages. At the end, once every learner process is dead, it
compares. A file changed or removed is put back as it was; a new file that would load into the next
run is moved aside (renamed `*.refused`); either way the run fails, naming each path and saying what
to do. Learner code that cannot write these files (bubblewrap, or the uid drop when grading as root)
never gets this far; this check is what the fallback without either still has.
"""

from __future__ import annotations

import importlib
import os
import site
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Snapshot", "preload"]

_SKIP_DIRS = {"__pycache__", ".pytest_cache", ".hypothesis", ".mypy_cache", ".ruff_cache"}
_SKIP_FILES = {".sandbox-state.json", ".sandbox-state.json.tmp", "exercise.py"}
"""Not what the grader judges with: its own progress file, and each challenge's `exercise.py`, the
learner's to edit at any moment (a save while `sandbox watch` grades must never be put back)."""
_LOADABLE = {"conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"}
_MAX_KEPT = 64 << 20
"""Bytes kept to put files back: the package and the challenges are a few MB."""
_MODULES = (
    "sandbox.engine._catalogue", "sandbox.strategies", "sandbox.grading.judge._challenge",
    "sandbox.grading.judge._generated", "sandbox.grading.judge._grouping", "sandbox.grading.judge._report",
)  # fmt: skip
"""The judge's modules a pytest run grades with. Not `sandbox grade`'s (`grading.programs`): that
command runs no pytest session, so this run never imports them after learner code starts (and
loading them cost each `sandbox check` a twentieth of a second)."""


def preload() -> None:
    """Load what the grader judges with, before any learner code runs: the catalogue's scenario files
    are read now, not on first use (when learner code could have rewritten them), and so is every
    module of the judge."""
    for name in _MODULES:
        importlib.import_module(name)
    from ...engine import _catalogue
    from ...wire import PROVIDERS, get_wire_format

    _catalogue.catalogue()
    for provider in PROVIDERS:
        get_wire_format(provider)


@dataclass
class Snapshot:
    """The bytes of the watched trees and the loadable files, at the start of a run."""

    trees: tuple[Path, ...]
    files: dict[Path, bytes]
    loadable: set[Path]

    @classmethod
    def take(cls, trees: Iterable[Path], around: Iterable[Path] = ()) -> Snapshot:
        """Keep `trees` (the package, the challenges folder); watch for loadable files in them, in the
        folders `around` (where pytest looks for ini files and conftest.py), and in site-packages."""
        roots = tuple(sorted({tree.resolve() for tree in trees if tree.is_dir()}))
        files: dict[Path, bytes] = {}
        kept = 0
        for path in _walk(roots):
            try:
                data = path.read_bytes()
            except OSError:
                continue
            kept += len(data)
            if kept > _MAX_KEPT:
                break
            files[path] = data
        watched = cls(roots, files, set())
        watched._around = tuple(sorted({folder.resolve() for folder in around if folder.is_dir()}))
        watched.loadable = set(watched._loadable())
        return watched

    _around: tuple[Path, ...] = ()

    def _loadable(self) -> Iterator[Path]:
        for folder in self._around:
            for name in _LOADABLE:
                if (folder / name).is_file():
                    yield folder / name
        for path in _walk(self.trees):
            if path.name in _LOADABLE:
                yield path
        for folder in _site_packages():
            try:
                entries = list(folder.iterdir())
            except OSError:
                continue
            yield from (entry for entry in entries if entry.suffix == ".pth")

    def check(self, ignore: Iterable[Path] = ()) -> list[str]:
        """Put back what changed, move aside what would load into the next run; one problem a line.
        `ignore`: what the grader itself writes there (the report)."""
        problems = []
        now = set(_walk(self.trees)) - {path.resolve() for path in ignore}
        for path, data in self.files.items():
            try:
                same = path.read_bytes() == data
            except OSError:
                same = False
            if not same:
                problems.append(_restore(path, data))
        for path in sorted(now - set(self.files)):
            if path.name in _LOADABLE or path.suffix == ".pth":
                continue  # reported below, with what was done about it
            problems.append(
                f"{path}: appeared during grading (graded code wrote it). Delete it, then grade again; "
                "nothing the graded code writes is read by the grader."
            )
        for path in sorted(set(self._loadable()) - self.loadable):
            problems.append(_refuse(path))
        return problems


def _walk(roots: Iterable[Path]) -> Iterator[Path]:
    for root in roots:
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(name for name in dirs if name not in _SKIP_DIRS and not name.endswith(".egg-info"))
            for name in sorted(names):
                if name not in _SKIP_FILES and not name.endswith((".pyc", ".refused")):
                    yield Path(folder) / name


def _site_packages() -> list[Path]:
    found = {Path(path) for path in [*site.getsitepackages(), site.getusersitepackages()] if path}
    found |= {Path(path) for path in sys.path if path.endswith(("site-packages", "dist-packages"))}
    return sorted(path for path in found if path.is_dir())


def _restore(path: Path, data: bytes) -> str:
    what = "was changed" if path.exists() else "was removed"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    except OSError as error:
        return (
            f"{path}: {what} during grading (by the graded code), and could not be put back ({error.strerror}). "
            "Restore it (`git checkout -- PATH`, or reinstall the package), then grade again."
        )
    return (
        f"{path}: {what} during grading (by the graded code); it has been put back as it was. Grade again: "
        "this run judged with what the graded code wrote."
    )


def _refuse(path: Path) -> str:
    refused = path.with_name(path.name + ".refused")
    try:
        os.replace(path, refused)
    except OSError as error:
        return (
            f"{path}: appeared during grading and would load into the next run; it could not be moved aside "
            f"({error.strerror}). Delete it before grading again."
        )
    return (
        f"{path}: appeared during grading and would load into the next run; refused (moved to {refused.name}). "
        "Delete it, then grade again."
    )
