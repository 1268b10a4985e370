"""What the script sent at a step, recomputed: its calls and its reasoning.

Ids and reasoning derive from (scenario, step, index), so the replay can compare an echoed turn with
what the sandbox sent, and the next turn is rendered from the same recomputation. May touch: nothing
but a bounded memo of the calls each step made; it reads the scenario and keeps no request's state.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..messages._types import Reasoning, ToolCall
from ..wire import Conversation, WireFormat
from ._scenario import Scenario, Step

__all__ = ["call_tokens", "expected_calls", "expected_reasoning", "sent_calls"]


def expected_calls(wire: WireFormat, scenario: Scenario, step: Step, step_number: int) -> list[ToolCall]:
    return [
        ToolCall(wire.call_id(f"{scenario.name}/{step_number}/{index}"), call.name, dict(call.arguments))
        for index, call in enumerate(step.calls)
    ]


def call_tokens(calls: Sequence[ToolCall]) -> int:
    """The output tokens `calls` count (see "Usage figures" in docs/agents/scenarios.md)."""
    return sum(8 + len(str(call.arguments)) // 4 for call in calls)


class _SentCalls:
    """(wire, scenario, step number, script step) -> the calls the script made there, for the replay to
    compare with alone: never handed out (a caller could change their arguments), and recomputed only
    when the scenario object is another one. Bounded: emptied when full. `cache_clear` and
    `cache_info` as a `functools` memo has them, so whatever empties the sandbox's memos empties it."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._calls: dict[tuple[str, int, int, int], tuple[Scenario, tuple[ToolCall, ...], int]] = {}
        self.cache_clear = self._calls.clear
        """Empties the memo (an attribute of the memo, not of its class, as a `functools` memo has it)."""

    def __call__(
        self, wire: WireFormat, scenario: Scenario, script_index: int, step_number: int
    ) -> tuple[ToolCall, ...]:
        found = self._calls.get((wire.name, id(scenario), step_number, script_index))  # `_made`'s hit, inline
        if found is not None and found[0] is scenario:
            return found[1]
        return self._made(wire, scenario, script_index, step_number)[1]

    def rendered(
        self, wire: WireFormat, scenario: Scenario, script_index: int, step_number: int
    ) -> tuple[list[ToolCall], int]:
        """The calls for an answer (copies: the answer's own) and the output tokens they count."""
        _, calls, tokens = self._made(wire, scenario, script_index, step_number)
        copies = []
        for call in calls:
            copies.append(ToolCall(call.id, call.name, dict(call.arguments)))
        return copies, tokens

    def _made(
        self, wire: WireFormat, scenario: Scenario, script_index: int, step_number: int
    ) -> tuple[Scenario, tuple[ToolCall, ...], int]:
        key = (wire.name, id(scenario), step_number, script_index)
        found = self._calls.get(key)
        if found is not None and found[0] is scenario:
            return found
        calls = tuple(expected_calls(wire, scenario, scenario.steps[script_index], step_number))
        if len(self._calls) >= self._size:
            self._calls.clear()
        made = (scenario, calls, call_tokens(calls))
        self._calls[key] = made
        return made

    def cache_info(self) -> int:
        return len(self._calls)


sent_calls = _SentCalls()


def expected_reasoning(
    wire: WireFormat, scenario: Scenario, step: Step, step_number: int, conversation: Conversation
) -> list[Reasoning]:
    """The reasoning sent with turn `step_number`: recomputed, like the call ids, from the seed."""
    if not scenario.reasoning:
        return []
    seed = f"{scenario.name}/{step_number}"
    return wire.reasoning_parts(
        seed, step.thought(), conversation, redacted=step.redacted_thinking, acting=bool(step.calls)
    )
