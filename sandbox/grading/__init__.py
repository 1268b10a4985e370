"""Grading for the challenges: what `challenges/*/test_*.py` import, and the plugin builds on.

A grading test takes the `challenge` fixture (a `Challenge`), opens a `Dialogue` for a scenario on a
wire format, calls the learner's function through it, and states what must be true:

    talk = challenge.dialogue("runaway", provider)
    outcome = talk.call(challenge.function("complete"), talk.client, talk.request, talk.run)
    talk.expect_gave_up(outcome, bound=5)

Beyond the catalogue's scenarios, `tasks()` and `runaways()` generate them (0 to 8 calls a turn, any
tool names and arguments) for properties run under `GRADING` settings: see `_generated`.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..wire import PROVIDERS
from ._challenge import Challenge, take_away_collect_stream
from ._dialogue import BUDGET, Dialogue
from ._feedback import NotStarted
from ._runner import Outcome

__all__ = [
    "BUDGET",
    "GRADING",
    "PROVIDERS",
    "Challenge",
    "Dialogue",
    "NotStarted",
    "Outcome",
    "runaways",
    "take_away_collect_stream",
    "tasks",
]

# Shown as `sandbox.grading.NotStarted` in reports (JUnit prints the class path), as httpx does.
for _name in ("Challenge", "Dialogue", "NotStarted", "Outcome"):
    globals()[_name].__module__ = __name__


def __getattr__(name: str) -> Any:
    """`GRADING`, `tasks` and `runaways` load hypothesis: only when a grading test asks for them, so the
    plugin adds nothing to the start-up of unrelated test runs.

    Looked up in `sys.modules` each time, never cached here: pytester's in-process runs drop the
    modules a run imported (hypothesis among them), and a stale copy would hand the next run
    strategies built by another hypothesis."""
    if name in ("GRADING", "runaways", "tasks"):
        return getattr(importlib.import_module(f"{__name__}._generated"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
