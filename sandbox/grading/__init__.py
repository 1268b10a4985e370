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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..wire import PROVIDERS
    from .boundary._runner import Outcome
    from .judge._challenge import Challenge, take_away_collect_stream
    from .judge._dialogue import BUDGET, Dialogue
    from .judge._feedback import NotStarted
    from .judge._generated import GRADING, runaways, tasks

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

_HOMES = {
    "BUDGET": ".judge._dialogue",
    "Challenge": ".judge._challenge",
    "Dialogue": ".judge._dialogue",
    "NotStarted": ".judge._feedback",
    "Outcome": ".boundary._runner",
    "PROVIDERS": "..wire",
    "take_away_collect_stream": ".judge._challenge",
}
_SHOWN_HERE = ("Challenge", "Dialogue", "NotStarted", "Outcome")


def __getattr__(name: str) -> Any:
    """Everything here is imported on first use. A worker process imports this package for its own
    modules, and must not pay for pytest; and `GRADING`, `tasks` and `runaways` load hypothesis,
    which only grading tests need.

    Looked up in `sys.modules` each time, never cached here: pytester's in-process runs drop the
    modules a run imported (hypothesis among them), and a stale copy would hand the next run
    strategies built by another hypothesis."""
    if name in ("GRADING", "runaways", "tasks"):
        return getattr(importlib.import_module(f"{__name__}.judge._generated"), name)
    if name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name], __name__), name)
        if name in _SHOWN_HERE:
            value.__module__ = __name__  # shown as `sandbox.grading.NotStarted` in reports, as httpx does
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
