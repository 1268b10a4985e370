"""The tools a graded program runs, over HTTP: the scenario's outputs, failures on demand, and proof
of overlap.

A program in any language runs each tool call by a request to the grader's sandbox, so the grader
sees every execution: which call, in which turn, and whether the calls of a turn were in flight
together. For challenge 08 a call waits until every call of its turn has started; if none of its
siblings start within `wait`, the turn ran one call at a time. Once all are in flight they finish
last-first, so a program that sends results in completion order (not call order) is always caught.
Each request is served on its own thread, so the waiting is done with threading events.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .._scenario import Call, Scenario
from .._transport import Journal
from .._types import ToolCall

__all__ = ["ToolDesk", "ToolReply", "scripted_key"]


def scripted_key(scenario: Scenario, name: str, arguments: Mapping[str, Any]) -> str | None:
    """`get_weather(city='Paris')`, the scenario's name for a call it makes, whatever the order of the
    arguments on the wire (Go's encoding/json sorts map keys); None for a call the script never makes."""
    for step in scenario.steps:
        for call in step.calls:
            if call.name == name and dict(call.arguments) == dict(arguments):
                return repr(call)
    return None


@dataclass(frozen=True)
class ToolReply:
    """What one tool run answered: the output, or why the tool failed."""

    output: str | None = None
    error: str = ""
    failure: Literal["", "unknown", "not_asked", "raised"] = ""
    """Empty when the tool ran: `unknown` tool, a call the model did not ask for, or the tool `raised`."""

    def as_json(self) -> dict[str, str]:
        return {"output": self.output} if self.output is not None else {"error": self.error}


@dataclass
class _Turn:
    calls: list[ToolCall]
    started: threading.Event = field(default_factory=threading.Event)
    finished: dict[int, threading.Event] = field(default_factory=dict)
    claimed: set[int] = field(default_factory=set)

    def position(self, name: str, arguments: Mapping[str, Any]) -> int:
        """The call's place in its turn, by name and arguments: Gemini has no call ids."""
        for index, known in enumerate(self.calls):
            if index not in self.claimed and known.name == name and dict(known.arguments) == dict(arguments):
                self.claimed.add(index)
                return index
        index = len(self.claimed)
        self.claimed.add(index)
        return index

    def event(self, position: int) -> threading.Event:
        return self.finished.setdefault(position, threading.Event())


class ToolDesk:
    """Runs the tools of one graded case for the program under test."""

    def __init__(
        self,
        scenario: Scenario,
        journal: Journal,
        *,
        failing: Mapping[str, str] | None = None,
        unknown_tools: Collection[str] = (),
        wait: float | None = None,
    ) -> None:
        """`failing`: calls (`get_weather(city='Pariss')`) that fail with this message. `unknown_tools`:
        names the desk answers as unknown. `wait`: check overlap, waiting this long for siblings."""
        self.scenario = scenario
        self.failing = dict(failing or {})
        self.unknown_tools = set(unknown_tools)
        self.wait = wait
        self._journal = journal
        self._lock = threading.Lock()
        self._turns: dict[int, _Turn] = {}
        self.runs: list[tuple[int, Call, ToolReply]] = []
        """(request number, call, reply) of every run, in the order they arrived."""
        self.one_at_a_time: tuple[int, ToolCall] | None = None
        """The turn (its request number) and the call that waited in vain for its siblings."""

    def describe(self) -> list[dict[str, Any]]:
        """The scenario's tools as the program reads them: name, description, JSON schema."""
        return [
            {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)}
            for tool in self.scenario.tools
        ]

    def run(self, name: str, arguments: Mapping[str, Any]) -> ToolReply:
        """One execution, answered as the scenario says (and held back for the overlap check)."""
        reply = self._answer(name, arguments)
        with self._lock:
            number = len(self._journal)
            self.runs.append((number, Call(name, dict(arguments)), reply))
        if self.wait is not None and reply.failure in ("", "raised"):  # calls the model asked for
            self._overlap(number, name, arguments)
        return reply

    def _answer(self, name: str, arguments: Mapping[str, Any]) -> ToolReply:
        known = {tool.name for tool in self.scenario.tools}
        if name in self.unknown_tools or name not in known:
            tools = ", ".join(sorted(known))
            return ToolReply(error=f"unknown tool {name!r}: this scenario's tools are {tools}", failure="unknown")
        key = scripted_key(self.scenario, name, arguments)
        if key is None:
            shown = repr(Call(name, dict(arguments)))
            why = f"{shown} is not a call the model asked for: run the calls of the model's turn."
            return ToolReply(error=why, failure="not_asked")
        if key in self.failing:
            return ToolReply(error=self.failing[key], failure="raised")
        return ToolReply(output=self.scenario.tool_outputs.get(key, ""))

    def failed_in_turn(self, number: int) -> bool:
        """Whether a tool run of the turn answered by request `number` failed."""
        with self._lock:
            return any(turn == number and reply.failure for turn, _, reply in self.runs)

    def _overlap(self, number: int, name: str, arguments: Mapping[str, Any]) -> None:
        assert self.wait is not None
        with self._lock:
            last = self._journal.last
            calls = last.turn.message.tool_calls() if last is not None and last.turn is not None else []
            turn = self._turns.setdefault(number, _Turn(list(calls)))
            position = turn.position(name, arguments)
            if len(turn.claimed) >= len(turn.calls):
                turn.started.set()
        if self.one_at_a_time is None and not turn.started.wait(self.wait):
            with self._lock:
                if self.one_at_a_time is None:
                    self.one_at_a_time = (number, ToolCall(f"call {position + 1}", name, dict(arguments)))
        if self.one_at_a_time is None and position + 1 < len(turn.calls):
            with self._lock:
                later = turn.event(position + 1)
            later.wait(self.wait)  # that call never ran: the order of results is checked on what was sent
        with self._lock:
            turn.event(position).set()
