"""Which step plays next when the request's content chooses it: a step's `when`, a `respond` function.

The replay asks at every model turn of the history, with the conversation as it stood when that turn
was asked for, so the choice is a function of the history, like everything the replay recomputes:
`respond` is called once per model turn of each request. A request no step meets, and a predicate
or function that fails, get a `sandbox:` 400 that names what arrived and the conditions compared.

May touch: the scenario's predicates and function (the engineer's code), the conversation it is
handed; it keeps no state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Set

from ..wire import Conversation, ErrorResponse, Rule, WireFormat
from ._refusals import printable
from ._scenario import Scenario, Step
from ._when import PredicateFailed, describe, matches

__all__ = ["choose", "finished"]

_SHOWN = 120
"""Characters of each text an error quotes."""


def choose(
    wire: WireFormat,
    scenario: Scenario,
    conversation: Conversation,
    upto: int,
    after: int,
    visited: Set[int],
    step_number: int,
) -> tuple[int, Step]:
    """The script index and step of the model turn asked for by `conversation.messages[:upto]`, the
    step at `after` (-1: none yet) having played to its end. A `respond` scenario's index is -1."""
    prefix = conversation
    if upto < len(conversation.messages):
        messages, paths = conversation.messages[:upto], conversation.paths[:upto]
        prefix = dataclasses.replace(conversation, messages=messages, paths=paths)
    if scenario.respond is not None:
        return -1, _responded(wire, scenario, prefix, step_number)
    steps = scenario.steps
    following = after + 1
    if following < len(steps) and steps[following].when is None:
        return following, steps[following]  # the branch goes on in script order
    tried: list[int] = []
    for index, step in enumerate(steps):
        if step.when is None or index in visited:
            continue
        try:
            if matches(step.when, prefix):
                return index, step
        except PredicateFailed as exc:
            raise _failed(wire, scenario, f"the when predicate of step {index} {exc}") from None
        tried.append(index)
    if not tried:
        raise finished(wire, scenario, conversation, upto if upto < len(conversation.messages) else None)
    asked_again = bool(prefix.messages) and prefix.messages[-1].role == "assistant"
    raise _unmatched(wire, scenario, prefix, tried, asked_again)


def _responded(wire: WireFormat, scenario: Scenario, prefix: Conversation, step_number: int) -> Step:
    """The turn `respond` returns for `prefix`, as a step."""
    function = scenario.respond
    assert function is not None  # the caller's check
    name = getattr(function, "__qualname__", type(function).__name__)
    try:
        turn = function(prefix)
    except Exception as exc:  # noqa: BLE001 - the engineer's function: its failure is reported, never raised
        raise _failed(wire, scenario, f"its function {name}() raised {type(exc).__name__}: {exc}") from None
    if isinstance(turn, str):
        return Step(text=turn)
    if turn is None:
        raise wire.error(
            400,
            f"sandbox: scenario {scenario.name!r} has no answer for this request: its function {name}() "
            f"returned None for model turn {step_number}. {_arrived(prefix)} Return a sandbox.Step (text, "
            "calls or output) or a string for every request your code sends.",
            rule=Rule.NO_MATCHING_STEP,
            code="sandbox_no_matching_step",
        )
    if not isinstance(turn, Step) or turn.repeat != "once" or turn.when is not None:
        raise _failed(
            wire,
            scenario,
            f"its function {name}() returned {turn!r:.200}; return a sandbox.Step without repeat= or when= "
            "(the function itself decides each turn), a string, or None",
        )
    declared = {tool.name for tool in scenario.tools}
    unknown = [call.name for call in turn.calls if scenario.tools and call.name not in declared]
    if unknown:
        raise _failed(
            wire, scenario, f"its function {name}() calls {unknown}, which are not among its tools {sorted(declared)}"
        )
    return turn


def _failed(wire: WireFormat, scenario: Scenario, what: str) -> ErrorResponse:
    return wire.error(
        400,
        printable(
            f"sandbox: scenario {scenario.name!r} failed: {what}. Fix the scenario's code; the request "
            "itself was not judged."
        ),
        rule=Rule.SCENARIO_ERROR,
        code="sandbox_scenario_error",
    )


def _unmatched(
    wire: WireFormat, scenario: Scenario, prefix: Conversation, tried: list[int], asked_again: bool
) -> ErrorResponse:
    """The error for a request that none of the steps left to play meets; `asked_again`: the request
    ends with the model's own turn (a loop that did not stop at its answer)."""
    whens = "\n".join(f"- step {index}: when {describe(scenario.steps[index].when)}" for index in tried)
    stop = (
        " The model already gave an answer (a turn with no tool calls): if the loop asked again, stop it "
        "when resp.tool_calls() is empty."
        if asked_again
        else ""
    )
    return wire.error(
        400,
        printable(
            f"sandbox: no step of scenario {scenario.name!r} left to play matches this request. "
            f"{_arrived(prefix)} The steps tried:\n{whens}\n{stop.strip()}".rstrip()
            + "\nAdd a step whose when matches, or change the request."
        ),
        rule=Rule.NO_MATCHING_STEP,
        code="sandbox_no_matching_step",
    )


def _arrived(prefix: Conversation) -> str:
    """What a `when` reads of the request, as an error quotes it."""
    messages = prefix.messages
    user = next((message.text() for message in reversed(messages) if message.role == "user"), None)
    results: list[str] = []
    for message in reversed(messages):
        if message.role == "assistant":
            break
        results.extend(repr(result.content[:_SHOWN]) for result in message.tool_results())
    system = "\n".join(message.text() for message in messages if message.role == "system")
    said = [f"the last user message is {user[:_SHOWN]!r}" if user is not None else "there is no user message"]
    if results:
        said.append(f"the tool results since the model's last turn are {', '.join(reversed(results))}")
    if system:
        said.append(f"the system prompt is {system[:_SHOWN]!r}")
    said.append(f"the tools are {[tool.name for tool in prefix.tools]}")
    return "In the request, " + "; ".join(said) + "."


def finished(wire: WireFormat, scenario: Scenario, conversation: Conversation, index: int | None) -> ErrorResponse:
    """The error for a request after the scenario's last step."""
    return wire.error(
        400,
        f"sandbox: scenario {scenario.name!r} is over: the model already gave its final answer (a turn "
        "with no tool calls), and this request asks for more. Stop the loop when "
        "resp.tool_calls() is empty; the stop reason is not a reliable end signal.",
        rule=Rule.SCRIPT_FINISHED,
        param=conversation.paths[index] if index is not None else None,
        code="sandbox_script_finished",
        message_index=index,
    )
