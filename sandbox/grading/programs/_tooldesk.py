"""The tools a graded program runs, over HTTP: the scenario's outputs, and failures on demand.

A program in any language runs each tool call by a request to the grader's endpoint, so the grader
sees every execution, in which turn it came, and what it answered. Whether a turn's calls overlapped
(challenge 08) is the `ConcurrencyProbe`'s job, on the endpoint's event loop, as for Python code.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ...adapters._transport import Journal
from ...engine._scenario import Call, Scenario

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


class ToolDesk:
    """Runs the tools of one graded case for the program under test."""

    def __init__(
        self,
        scenario: Scenario,
        journal: Journal,
        *,
        failing: Mapping[str, str] | None = None,
        unknown_tools: Collection[str] = (),
    ) -> None:
        """`failing`: calls (`get_weather(city='Pariss')`) that fail with this message. `unknown_tools`:
        names the desk answers as unknown."""
        self.scenario = scenario
        self.failing = dict(failing or {})
        self.unknown_tools = set(unknown_tools)
        self._journal = journal
        self.runs: list[tuple[int, Call, ToolReply]] = []
        """(request number, call, reply) of every run, in the order they arrived."""

    def describe(self) -> list[dict[str, Any]]:
        """The scenario's tools as the program reads them: name, description, JSON schema."""
        return [
            {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)}
            for tool in self.scenario.tools
        ]

    def run(self, name: str, arguments: Mapping[str, Any]) -> ToolReply:
        """One execution, answered as the scenario says, and recorded with the turn it belongs to."""
        reply = self._answer(name, arguments)
        self.runs.append((len(self._journal), Call(name, dict(arguments)), reply))
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
        return any(turn == number and reply.failure for turn, _, reply in self.runs)
