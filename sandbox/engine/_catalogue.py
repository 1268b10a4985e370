"""The scenario catalogue: the TOML files shipped in `sandbox/engine/scenarios/`, plus files an operator names.

Scenarios load only from here or from paths given on purpose, never from a request. Every built-in
scenario that calls tools also comes as a reasoning model, `<name>_reasoning`, unless a file of
that name says otherwise.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from .._exceptions import ScenarioError
from ._scenario import Scenario

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["catalogue", "get_scenario", "load_scenario", "load_scenarios"]

CATALOGUE_DIR = Path(__file__).parent / "scenarios"


MAX_FILE_BYTES = 1024 * 1024
"""A scenario file is a few kilobytes; anything over this is not one (or is `/dev/zero`)."""


def load_scenario(path: str | Path) -> Scenario:
    """Read one scenario TOML file; errors name the file and what to fix."""
    path = Path(path)
    text = _read_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{path}: not valid TOML: {exc}.") from None
    except RecursionError:
        raise ScenarioError(f"{path}: not valid TOML: its arrays or tables nest too deeply.") from None
    return Scenario.from_dict(data, source=str(path))


def _read_text(path: Path) -> str:
    """The file's text, refusing what is not a small regular UTF-8 file. It is opened without
    blocking and checked before reading, so a FIFO or a device named `*.toml` cannot hang or flood."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ScenarioError(f"Cannot read scenario file {str(path)!r}: {exc.strerror or exc}.") from None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ScenarioError(f"{path}: not a regular file (a folder, FIFO or device); name a *.toml file.")
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ScenarioError(f"{path}: over {MAX_FILE_BYTES} bytes, far larger than any scenario; name a *.toml file.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not UTF-8 text (byte {exc.start} is invalid); save it as UTF-8.") from None


def load_scenarios(paths: Iterable[str | Path]) -> dict[str, Scenario]:
    """Scenarios from files and folders of `*.toml` files, by name; a duplicate name is an error."""
    found: dict[str, Scenario] = {}
    for entry in paths:
        entry = Path(entry)
        files = sorted(entry.glob("*.toml")) if entry.is_dir() else [entry]
        for file in files:
            scenario = load_scenario(file)
            if scenario.name in found:
                raise ScenarioError(f"Two scenarios are named {scenario.name!r}; the second is in {file}.")
            found[scenario.name] = scenario
    return found


REASONING_SUFFIX = "_reasoning"


@lru_cache(maxsize=1)
def _builtin() -> dict[str, Scenario]:
    found = load_scenarios([CATALOGUE_DIR])
    variants = {
        name + REASONING_SUFFIX: scenario.with_reasoning(name + REASONING_SUFFIX)
        for name, scenario in found.items()
        if not scenario.reasoning and any(step.calls for step in scenario.steps)
    }
    return {**variants, **found}


def catalogue() -> dict[str, Scenario]:
    """Every built-in scenario, by name: a fresh dict each call, so no caller can change another's."""
    return dict(_builtin())


def get_scenario(name: str) -> Scenario:
    try:
        return _builtin()[name]
    except KeyError:
        known = "\n".join(f"- {known}" for known in sorted(catalogue()))
        raise ScenarioError(f"No scenario named {name!r}. The catalogue has:\n{known}") from None
