"""Coroutines handed to the learner in challenge 08 (in its worker), kept so that one never awaited
becomes a verdict.

An un-awaited coroutine is a silent bug: `client.complete(req)` without `await` sends nothing, and
Python only warns when the coroutine is garbage-collected, at some later moment, inside whichever
test happens to be running then. Keeping every coroutine handed out lets the test that ran the code
report it, and closing the ones never started keeps Python from warning about them later.
"""

from __future__ import annotations

import inspect
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["HandedOut"]

T = TypeVar("T")


class HandedOut:
    """The coroutines given to the learner's code."""

    def __init__(self) -> None:
        self._coroutines: list[Coroutine[Any, Any, Any]] = []

    def keep(self, coroutine: Coroutine[Any, Any, T]) -> Coroutine[Any, Any, T]:
        self._coroutines.append(coroutine)
        return coroutine

    def close_unawaited(self) -> int:
        """How many were never awaited; they are closed, so Python will not warn about them."""
        waiting = [c for c in self._coroutines if inspect.getcoroutinestate(c) == inspect.CORO_CREATED]
        for coroutine in waiting:
            coroutine.close()
        return len(waiting)
