"""Replay a request's history against the script: where are we, and was every echoed turn ours?

The history is the only state. Ids derive from (scenario, step, index), so the script can recompute
what it sent at every earlier step (`_sent`) and compare the echoed turn with it. The wire format
has already enforced the provider's own ordering rules; what is left here are the mistakes a real
provider accepts but that leave the model confused (a turn rebuilt without its calls, a duplicated
or edited turn), each answered with a `sandbox:` error that says what to change. Where the
request's content chooses the steps (`when`, `respond`), `_choose` picks each turn's step from the
history before it. The turn to play next is rendered by `_answer`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..messages._types import Message, ToolCall, ToolResult
from ..wire import Conversation, ErrorResponse, Rule, WireFormat
from ._choose import choose, finished
from ._scenario import Scenario, Step, is_usable
from ._sent import expected_calls, expected_reasoning, sent_calls
from ._structured import structured_echo

__all__ = ["Position", "replay"]


@dataclass
class Position:
    """Where the conversation stands: the next step to play and what the loop has sent back."""

    step: int = 0
    """How many model turns the history already holds."""
    script_index: int = 0
    results: list[str] = field(default_factory=list)
    last: list[str] = field(default_factory=list)
    tolerated: list[str] = field(default_factory=list)
    """What the replay let pass that the strict echo check refuses (`Echo`), one phrase each."""
    played: int = 0
    """Calls of the step already played one per turn (`parallel_tool_calls: false`): the next turn
    plays the call after them."""
    playing: Step | None = None
    """The step the next turn plays: `steps[script_index]`, or what a `respond` function returned."""
    visited: frozenset[int] = frozenset()
    """In a scenario whose content chooses its steps, the script steps already played to their end."""


def replay(
    wire: WireFormat,
    scenario: Scenario,
    conversation: Conversation,
    resume: tuple[int, Position] | None = None,
    *,
    strict: bool = True,
    serial: bool = False,
) -> Position:
    """Walk the history; raise `ErrorResponse` (a `sandbox:` 400) for the first turn that is not ours.
    `resume` is where an earlier replay of the same history's start stopped (the message it stopped
    before, and its position): a continuation of kept state replays only what is new. Not `strict`,
    an echoed turn whose calls pair consistently (the same tools, in order, each answered under the
    id it was echoed with) plays on with other ids or arguments, as the real APIs accept it, and
    the position's `tolerated` says so. `serial` (the request disables parallel calls): a step's
    calls are played one per turn, and a history that ends partway through them stands at the
    next one (`Position.played`)."""
    messages = conversation.messages
    steps = scenario.steps
    selects = scenario.selects
    index, step_number, script_index = 0, 0, -1 if selects else 0
    visited: set[int] = set()
    pending = selects  # the next step is chosen by the request as it stood before the next model turn
    step = steps[0] if steps else None
    results: list[str] = []
    last_results: list[str] = []
    tolerated: list[str] = []
    if resume is not None:
        index, done = resume
        step_number, script_index, results, last_results, tolerated = (
            done.step,
            done.script_index,
            list(done.results),
            list(done.last),
            list(done.tolerated),
        )
        visited, pending, step = set(done.visited), False, done.playing
    count = len(messages)
    final = count - 1  # the history's last model turn (the reasoning check's `last`)
    while final >= index and messages[final].role != "assistant":
        final -= 1
    reasons = scenario.reasoning
    while index < count:
        message = messages[index]
        if message.role != "assistant":
            index += 1
            continue
        if pending:
            script_index, step = choose(wire, scenario, conversation, index, script_index, visited, step_number)
            pending = False
        elif not selects:
            if script_index >= len(steps):
                raise finished(wire, scenario, conversation, index)
            step = steps[script_index]
        assert step is not None  # chosen, the script's, or a chosen step playing again (a repeat)
        # The provider's own reasoning rules come first: a real provider refuses before any model reads.
        reasoning = expected_reasoning(wire, scenario, step, step_number, conversation) if reasons else ()
        try:
            wire.check_reasoning(conversation, index, reasoning, last=index == final)
        except ErrorResponse as error:
            # the API's own refusals stand; the sandbox's (a `sandbox:` message, what the API accepts) are strict's
            if strict or not error.message.startswith("sandbox:"):
                raise
            tolerated.append(f"reasoning-dropped {conversation.paths[index]}")
        echoed = message.tool_calls()
        if step.output is not None:
            expected: Sequence[ToolCall] = structured_echo(wire, scenario, step, step_number, echoed)
        elif scenario.respond is None:
            expected = sent_calls(wire, scenario, script_index, step_number)
        else:
            expected = expected_calls(wire, scenario, step, step_number)
        if 0 < len(echoed) < len(expected):  # perhaps a parallel turn split over several messages
            group = _turn_group(wire, messages, index, expected)
            echoed = [call for member in group for call in messages[member].tool_calls()]
        else:
            group = [index]
        if not _same_calls(wire, echoed, expected):
            part = _trailing_part(wire, messages, index, expected) if serial else None
            if part is not None:
                sent = [call for member in part for call in messages[member].tool_calls()]
                _answers(wire, conversation, part, sent, expected[: len(sent)])  # each answered, or its error
                return Position(
                    step_number, script_index, results, last_results, tolerated, len(sent), step, frozenset(visited)
                )
            if strict or not _same_tools(echoed, expected):
                raise _mismatch(wire, scenario, conversation, index, step_number, echoed, expected)
            tolerated.append(_difference(wire, echoed, expected, conversation.paths[index]))
        answers = _answers(wire, conversation, group, echoed, expected)
        last_results = []
        for answer in answers:
            last_results.append(answer.content)
        results += last_results
        step_number += 1
        if step.repeat == "once" or not _repeats(step, answers):
            if selects:
                visited.add(script_index)
                pending = True
            else:
                script_index += 1
        index = group[-1] + 1
    if pending:
        script_index, step = choose(wire, scenario, conversation, count, script_index, visited, step_number)
    elif not selects:
        if script_index >= len(steps):
            raise finished(wire, scenario, conversation, None)
        step = steps[script_index]
    assert step is not None
    return Position(step_number, script_index, results, last_results, tolerated, 0, step, frozenset(visited))


def _same_tools(echoed: Sequence[ToolCall], expected: Sequence[ToolCall]) -> bool:
    """The echoed calls name the tools the step called, in order: a turn rebuilt by a client that
    keeps its own ids (magentic) or adds to the arguments (langroid), which the real APIs accept."""
    if len(echoed) != len(expected):
        return False
    return all(got.name == want.name for got, want in zip(echoed, expected, strict=True))


def _difference(wire: WireFormat, echoed: Sequence[ToolCall], expected: Sequence[ToolCall], where: str) -> str:
    """What a tolerated echo changed, as `x-sandbox-tolerated` names it: `call-ids` and/or `arguments`,
    then where."""
    changed = []
    if wire.has_call_ids and any(got.id != want.id for got, want in zip(echoed, expected, strict=True)):
        changed.append("call-ids")
    if any(dict(got.arguments) != dict(want.arguments) for got, want in zip(echoed, expected, strict=True)):
        changed.append("arguments")
    return f"echo-{'+'.join(changed)} {where}"


def _repeats(step: Step, answers: list[ToolResult]) -> bool:
    if step.is_answer or step.repeat == "once":
        return False
    if step.repeat == "forever":
        return True
    return any(not is_usable(answer.content, is_error=answer.is_error) for answer in answers)


def _turn_group(wire: WireFormat, messages: list[Message], index: int, expected: Sequence[ToolCall]) -> list[int]:
    """The assistant messages that together hold the turn starting at `index`: that one message, or,
    for a parallel turn split into one assistant message per call with each call's result after it
    (`assistant[call A], tool[A], assistant[call B], tool[B]`, as openai-agents' LiteLLM model sends
    Anthropic and Gemini histories), every message of the split. Real providers accept the split,
    since each result follows its call; it is only taken as one turn when the pieces make up exactly
    the calls the step made, in order, so a duplicated or edited turn is still reported."""
    group = [index]
    calls = messages[index].tool_calls()
    following = index + 1
    while 0 < len(calls) < len(expected) and _same_calls(wire, calls, expected[: len(calls)]):
        while following < len(messages) and messages[following].role == "tool":
            following += 1
        if following == len(messages) or messages[following].role != "assistant":
            break
        more = messages[following].tool_calls()
        if not more or not _same_calls(wire, calls + more, expected[: len(calls) + len(more)]):
            break
        group.append(following)
        calls = calls + more
        following += 1
    return group if len(calls) == len(expected) else [index]


def _trailing_part(
    wire: WireFormat, messages: list[Message], index: int, expected: Sequence[ToolCall]
) -> list[int] | None:
    """The assistant messages from `index` to the end of the history when they hold the first calls
    of the step, one or more per message, each followed by its results: a step being played one call
    per turn. None for anything else."""
    group: list[int] = []
    calls: list[ToolCall] = []
    following = index
    while following < len(messages):
        if messages[following].role != "assistant":
            return None
        more = messages[following].tool_calls()
        if not more or not _same_calls(wire, calls + more, expected[: len(calls) + len(more)]):
            return None
        group.append(following)
        calls += more
        following += 1
        while following < len(messages) and messages[following].role == "tool":
            following += 1
    return group if 0 < len(calls) < len(expected) else None


def _answers(
    wire: WireFormat, conversation: Conversation, group: list[int], echoed: list[ToolCall], expected: Sequence[ToolCall]
) -> list[ToolResult]:
    """The result for each call of the turn, in call order (echoed ids: Gemini's are positional): the
    first result for its id between the turn's message and the next model turn."""
    messages = conversation.messages
    count = len(messages)
    answers: dict[str, ToolResult] = {}
    for member in group:
        at = member + 1  # an index, not an islice: no copy of the rest of a long history, no iterator made
        while at < count:
            message = messages[at]
            if message.role == "assistant":
                break
            for part in message.content:
                if isinstance(part, ToolResult) and part.call_id not in answers:  # the first result for an id
                    answers[part.call_id] = part
            at += 1
    results: list[ToolResult] = []
    for call in expected:
        result = answers.get(echoed[len(results)].id)
        if result is None:
            index = group[0]
            raise wire.error(
                400,
                f"sandbox: the tool call {_describe(wire, call)} in {conversation.paths[index]} has no result "
                "before the next model turn. Append one tool result per call, right after the turn "
                "that made them; a call with no result should get an error result, never silence.",
                rule=Rule.MISSING_RESULT,
                param=conversation.paths[index],
                code="sandbox_missing_result",
                message_index=index,
            )
        results.append(result)
    return results


def _mismatch(
    wire: WireFormat,
    scenario: Scenario,
    conversation: Conversation,
    index: int,
    step_number: int,
    echoed: list[ToolCall],
    expected: Sequence[ToolCall],
) -> ErrorResponse:
    """The error for echoed turn `index`, whose calls are not the ones the script made at that step."""
    where = conversation.paths[index]
    sent = ", ".join(_describe(wire, call) for call in expected) or "no tool calls (its final answer)"
    if expected and not echoed:
        detail = (
            "it has no tool calls. A real provider accepts this, but the model has lost its own calls "
            "and the results that follow answer nothing. Append resp.message itself, never a "
            "text-only reconstruction such as skyl.assistant_text(resp.text())."
        )
    else:
        got = ", ".join(_describe(wire, call) for call in echoed) or "no tool calls"
        detail = (
            f"it has {got}. Append each response's message exactly once, unchanged, in the order the responses arrived."
        )
    return wire.error(
        400,
        f"sandbox: {where} should be the model turn the sandbox sent at step {step_number} of scenario "
        f"{scenario.name!r}, which made {sent}; {detail}",
        rule=Rule.HISTORY_MISMATCH,
        param=where,
        code="sandbox_history_mismatch",
        message_index=index,
    )


def _same_calls(wire: WireFormat, echoed: Sequence[ToolCall], expected: Sequence[ToolCall]) -> bool:
    if len(echoed) != len(expected):
        return False
    ids = wire.has_call_ids
    at = 0
    for got in echoed:
        want = expected[at]
        at += 1
        if got.name != want.name or (ids and got.id != want.id):
            return False
        arguments, wanted = got.arguments, want.arguments
        # compared as dicts: as they are when they are one already (a decoded request)
        if type(arguments) is not dict:
            arguments = dict(arguments)
        if type(wanted) is not dict:
            wanted = dict(wanted)
        if arguments != wanted:
            return False
    return True


def _describe(wire: WireFormat, call: ToolCall) -> str:
    """The call as a learner would recognise it; its id only where the wire carries one (Gemini's
    calls have none, and naming the sandbox's internal placeholder would point at nothing)."""
    args = ", ".join(f"{key}={value!r}" for key, value in call.arguments.items())
    return f"{call.name}({args}) [id {call.id}]" if wire.has_call_ids else f"{call.name}({args})"
