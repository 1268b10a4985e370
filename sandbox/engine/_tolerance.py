"""How the faithful echo mode plays what the strict mode refuses, and what a request's parallel-call
setting asks of the script. The modes: `faithful` (the default) answers every request the real
provider would answer, and says what it let pass in the `x-sandbox-tolerated` header and
`Exchange.tolerated`; `strict` also refuses what a learner's loop should not send although the
provider accepts it (the graders' mode). docs/reference/fidelity.md lists each refusal.

May touch: the request's neutral conversation and the replay's position; it keeps no state.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from ..wire import Conversation, WireFormat
from ._refusals import missing_tools, undeclared
from ._replay import Position
from ._scenario import Scenario

__all__ = ["ECHO_MODES", "TOLERATED", "Echo", "plays_serially", "undeclared_answer"]

Echo = Literal["faithful", "strict"]
ECHO_MODES: tuple[Echo, ...] = ("faithful", "strict")
"""The modes `Engine(echo=...)` takes. `strict` refuses an echoed turn with other call ids or
arguments than the model sent, and a request that does not declare the scenario's tools."""
TOLERATED = "x-sandbox-tolerated"


def plays_serially(conversation: Conversation) -> bool:
    """The request disables parallel calls: Chat Completions' and Responses' `parallel_tool_calls:
    false`, Anthropic's `tool_choice.disable_parallel_tool_use: true`."""
    raw = conversation.raw
    if raw.get("parallel_tool_calls") is False:
        return True
    choice = raw.get("tool_choice")
    return isinstance(choice, dict) and choice.get("disable_parallel_tool_use") is True


def undeclared_answer(wire: WireFormat, scenario: Scenario, conversation: Conversation, position: Position) -> Position:
    """Where a request stands whose tools do not include one the step calls: at the script's next
    answer, as a real model that cannot call an undeclared tool answers in text (OpenAI's
    function-calling guide makes a last call without tools; Anthropic refuses a history with
    tool blocks and no tools before this, in its wire rules). Refused (`check_tools`) when the
    script has no answer to give (`sandbox_missing_tool`)."""
    assert position.playing is not None  # the replay names the step it stands at
    missing = undeclared(position.playing, conversation)
    if not missing:
        return position
    steps = scenario.steps
    answer = next(
        (index for index in range(max(position.script_index, 0), len(steps)) if not steps[index].calls),
        None,
    )
    if answer is None or scenario.respond is not None:  # a function's turn has no later answer to give
        raise missing_tools(wire, scenario, missing)
    tolerated = [*position.tolerated, f"undeclared-tools {','.join(missing)}: answered with the script's text"]
    return dataclasses.replace(position, script_index=answer, played=0, tolerated=tolerated, playing=steps[answer])
