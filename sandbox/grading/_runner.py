"""Run the learner's code in a daemon thread with a deadline: the cross-platform last resort.

The request budget stops a loop that keeps calling the model; this stops everything else (a loop
that never calls it again, an await that never finishes) without signals, which Windows lacks.
A coroutine result is run to completion in the same thread, so `async def` solutions are graded
the same way.
"""

from __future__ import annotations

import asyncio
import ctypes
import inspect
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Outcome", "TimedOut", "call_with_deadline"]


@dataclass(frozen=True)
class Outcome:
    """What the learner's call did: returned `value`, or raised `error`."""

    value: Any = None
    error: BaseException | None = None


class TimedOut(Exception):
    """The call did not finish in time; its thread has been asked to stop."""


class _Abandoned(BaseException):
    """Raised inside a thread the grader gave up on, so a busy loop stops burning the CPU."""


def call_with_deadline(function: Callable[..., Any], args: tuple[Any, ...], seconds: float) -> Outcome:
    """Call `function(*args)`, awaiting its result if it is awaitable. Raise `TimedOut` after `seconds`."""
    box: list[Outcome] = []

    def target() -> None:
        try:
            value = function(*args)
            if inspect.isawaitable(value):
                value = asyncio.run(_awaited(value))
            box.append(Outcome(value=value))
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the grading thread
            box.append(Outcome(error=exc))

    thread = threading.Thread(target=target, name=f"sandbox-grading-{_name(function)}", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        _interrupt(thread)
        raise TimedOut(seconds)
    return box[0]


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


def _name(function: Callable[..., Any]) -> str:
    return getattr(function, "__name__", type(function).__name__)


def _interrupt(thread: threading.Thread) -> None:
    """Best effort: a thread running Python code gets `_Abandoned` at its next bytecode; one blocked
    in a system call stays blocked, harmlessly, as a daemon."""
    if thread.ident is None or not hasattr(ctypes, "pythonapi"):  # pragma: no cover - not CPython
        return
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(_Abandoned))
