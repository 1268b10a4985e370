"""The async `run` of challenge 08: it proves that the calls of a turn ran concurrently.

Each call waits until every call of its turn is in flight; if none of its siblings start within
`WAIT`, the turn ran one call at a time. Once all are in flight they finish last-first, so a loop
that appends results as they complete (instead of in call order) is always caught, not only when
the scheduler happens to reorder them. Every coroutine handed out is kept, so one the learner never
awaited is reported (and closed, so Python does not warn about it later).

The waiting polls shared state under a lock instead of using asyncio.Event: a learner may run the
coroutines on several event loops (threads that each call asyncio.run), and an Event belongs to
one loop; the grader's own primitives must not fail the learner's code.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from .._transport import Journal
from .._types import ToolCall
from ._awaited import HandedOut

__all__ = ["WAIT", "ConcurrencyProbe"]

WAIT = 0.5
"""How long a call waits for its turn's other calls to start before the turn counts as sequential."""

_POLL = 0.002
"""Seconds between looks at the turn's state while a call waits."""


@dataclass
class _Turn:
    calls: list[ToolCall]
    started: bool = False
    finished: set[int] = field(default_factory=set)
    claimed: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def position(self, call: ToolCall) -> int:
        """The call's place in the turn, by name and arguments: Gemini's ids are the client's own."""
        with self.lock:
            for index, known in enumerate(self.calls):
                if (
                    index not in self.claimed
                    and known.name == call.name
                    and dict(known.arguments) == dict(call.arguments)
                ):
                    self.claimed.add(index)
                    break
            else:
                index = len(self.claimed)
                self.claimed.add(index)
            if len(self.claimed) >= len(self.calls):
                self.started = True
            return index


async def _until(condition: Callable[[], bool], seconds: float) -> bool:
    """Wait on any event loop until `condition()` holds; False if `seconds` pass first."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(_POLL)
    return True


class ConcurrencyProbe:
    def __init__(self, journal: Journal, output: Callable[[ToolCall], str], *, wait: float = WAIT) -> None:
        self.wait = wait
        """How long a call waits for its siblings (shorter once the learner's loop was seen sequential)."""
        self._journal = journal
        self._output = output
        self._turns: dict[int, _Turn] = {}
        self._handed_out = HandedOut()
        self.one_at_a_time: tuple[int, ToolCall] | None = None
        """The turn (its request number) and the call that waited in vain for its siblings."""

    def run(self, call: ToolCall) -> Coroutine[Any, Any, str]:
        """What the learner gets as `run`: a coroutine per call, as an `async def` tool would return."""
        return self._handed_out.keep(self._run(call))

    def never_awaited(self) -> int:
        """How many coroutines were never awaited; they are closed, so Python will not warn about them."""
        return self._handed_out.close_unawaited()

    async def _run(self, call: ToolCall) -> str:
        number = len(self._journal)
        last = self._journal.last
        calls = last.turn.message.tool_calls() if last is not None and last.turn is not None else []
        turn = self._turns.setdefault(number, _Turn(calls))
        position = turn.position(call)
        if self.one_at_a_time is None and not await _until(lambda: turn.started, self.wait):
            self.one_at_a_time = (number, call)
        if self.one_at_a_time is None and position + 1 < len(turn.calls):
            # That call may never run: the order of results is checked on what was sent.
            await _until(lambda: position + 1 in turn.finished, self.wait)
        with turn.lock:
            turn.finished.add(position)
        return self._output(call)
