"""The tool runs of challenge 08, seen from the grader: they prove that the calls of a turn ran concurrently.

The learner's async `run(call)` posts each call to the grader's endpoint, where it waits until every
call of its turn is in flight; if none of its siblings start within `WAIT`, the turn ran one call at a
time. Once all are in flight they finish last-first, so a loop that appends results as they complete
(instead of in call order) is always caught, not only when the scheduler happens to reorder them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from ...adapters._transport import Journal
from ...messages._types import ToolCall

__all__ = ["WAIT", "ConcurrencyProbe"]

WAIT = 0.5
"""How long a call waits for its turn's other calls to start before the turn counts as sequential."""


@dataclass
class _ProbeTurn:
    calls: list[ToolCall]
    started: asyncio.Event = field(default_factory=asyncio.Event)
    finished: dict[int, asyncio.Event] = field(default_factory=dict)
    claimed: set[int] = field(default_factory=set)
    running: int = 0
    most: int = 0
    """The most of its calls that were in flight at once."""

    def position(self, call: ToolCall) -> int:
        """The call's place in the turn, by name and arguments: Gemini's ids are the client's own."""
        for index, known in enumerate(self.calls):
            if index not in self.claimed and known.name == call.name and dict(known.arguments) == dict(call.arguments):
                self.claimed.add(index)
                return index
        index = len(self.claimed)
        self.claimed.add(index)
        return index


class ConcurrencyProbe:
    def __init__(self, journal: Journal, output: Callable[[ToolCall], str], *, wait: float = WAIT) -> None:
        self.wait = wait
        """How long a call waits for its siblings (shorter once the learner's loop was seen sequential)."""
        self._journal = journal
        self._output = output
        self._turns: dict[int, _ProbeTurn] = {}
        self._at_once = (0, 0)
        self.one_at_a_time: tuple[int, ToolCall] | None = None
        """The turn (its request number) and the call that waited in vain for its siblings: the turn
        did not have all its calls in flight at once (`at_once` says how many it had)."""

    def at_once(self) -> tuple[int, int]:
        """For the turn that was not concurrent: the most of its calls in flight at once, and how many it
        had (1 of 3 for a loop that awaits each call; 2 of 3 for batches of two)."""
        return self._at_once

    def how_they_ran(self) -> str:
        """The turn that was not concurrent, in words: 'one at a time' or 'at most 2 at a time (of 3)'."""
        most, total = self.at_once()
        return "one at a time" if most <= 1 else f"at most {most} at a time (of {total})"

    async def run(self, call: ToolCall) -> str:
        """One call's run, on the endpoint's event loop: its output once its turn's ordering allows."""
        number = len(self._journal)
        last = self._journal.last
        calls = last.turn.message.tool_calls() if last is not None and last.turn is not None else []
        turn = self._turns.setdefault(number, _ProbeTurn(calls))
        position = turn.position(call)
        turn.running += 1
        turn.most = max(turn.most, turn.running)
        try:
            return await self._run(call, turn, number, position)
        finally:
            turn.running -= 1

    async def _run(self, call: ToolCall, turn: _ProbeTurn, number: int, position: int) -> str:
        if len(turn.claimed) >= len(turn.calls):
            turn.started.set()
        if self.one_at_a_time is None:
            try:
                await asyncio.wait_for(turn.started.wait(), self.wait)
            except asyncio.TimeoutError:
                self.one_at_a_time = (number, call)
                # Counted now: a cap lets no more start while these wait, and a replay of the same
                # example that overlaps must not rewrite what this run did.
                self._at_once = (turn.most, len(turn.calls))
        if self.one_at_a_time is None and position + 1 < len(turn.calls):
            later = turn.finished.setdefault(position + 1, asyncio.Event())
            try:
                await asyncio.wait_for(later.wait(), self.wait)
            except asyncio.TimeoutError:
                pass  # that call never ran: the order of results is checked on what was sent
        turn.finished.setdefault(position, asyncio.Event()).set()
        return self._output(call)
