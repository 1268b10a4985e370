"""Checks on what reached the provider, as plain functions: each returns a problem or None.

They read neutral messages (`Exchange.conversation`), never the learner's own objects, except for
the `is_error` flag, which two wire formats cannot carry.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...messages._types import Message, ToolCall, ToolResult
from ._transcript import describe_call, quote

__all__ = ["EXPECT_ERROR", "Problem", "check_history", "diagnose", "missing_from_report", "says_error"]

EXPECT_ERROR = object()
"""The expected content of a result whose tool failed: any result marked or worded as an error."""

# Words that make a result read as a failure. "no result" or "missing" alone do not: a model can read
# them as an empty answer and ask again, so a missing result must say error, or carry is_error.
_ERRORISH = re.compile(
    r"error|fail|exception|traceback|unknown|not found|unable|could ?n[o']t|cannot|invalid|raised",
    re.IGNORECASE,
)
_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
# Advice is a verb of inspection or change aimed at what the tools return (or at the bound), within a
# few words: "check what these tools return", "inspect their results", "raise MAX_ROUNDS". The words
# of the report itself ("gave up ... see call sequence") are not advice.
_ADVICE = re.compile(
    r"\b(?:check|inspect|look\s+(?:at|into)|verify|investigate|examine|debug|review|see\s+(?:what|whether|why|if|how))"
    r"\W+(?:[\w'-]+\W+){0,6}?(?:return|output|result|respon|produc)"
    r"|\b(?:raise|increase|bump|lift)\W+(?:the\W+)?(?:bound|limit|max_rounds|maximum)",
    re.IGNORECASE,
)
# A run-length entry in a call sequence: `get_weather x5`, `get_weather ×5`, `get_weather*5`,
# `get_weather (x5)`, `get_weather (5 times)`, `get_weather 5 times`.
_REPEATS = re.compile(r"\s*(?:[x×*]\s*(\d+)\b|\(\s*[x×]?\s*(\d+)\s*(?:[x×]|times)?\s*\)|(\d+)\s*(?:times|[x×])(?!\w))")
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")


@dataclass(frozen=True)
class Problem:
    headline: str
    index: int | None = None
    """The message to mark in the transcript."""
    kind: str = ""
    """The lesson rule it breaks, when not plain call order: `turn_first`, `turn_once`, `call_id`,
    `duplicate` or `error_result`."""


def says_error(result: ToolResult, sent: ToolResult | None) -> bool:
    """Marked as an error on the wire or by the learner, or worded as one."""
    return result.is_error or bool(sent and sent.is_error) or bool(_ERRORISH.search(result.content))


def _result_at(messages: Sequence[Message], index: int) -> ToolResult | None:
    if index >= len(messages) or messages[index].role != "tool":
        return None
    results = messages[index].tool_results()
    return results[0] if len(results) == 1 else None


def check_history(
    messages: Sequence[Message],
    sent: Sequence[Message],
    expected: Callable[[ToolCall], object],
    *,
    has_call_ids: bool,
    produced: str = "run(call) returned",
) -> Problem | None:
    """Every turn with calls is followed by one result per call, in call order, each carrying what
    `run` produced for that call (or an error result where `expected` says EXPECT_ERROR).

    `produced` says where the outputs came from, as the learner knows it (challenge 01 has no `run`:
    `results` held them)."""
    for index, message in enumerate(messages):
        calls = message.tool_calls() if message.role == "assistant" else []
        for position, call in enumerate(calls):
            at = index + 1 + position
            result = _result_at(messages, at)
            nth = _ORDINALS[position] if position < len(_ORDINALS) else f"#{position + 1}"
            if result is None:
                return Problem(
                    f"the {nth} call of message {index}, {describe_call(call)}, has no result at message {at}: "
                    "each call needs its own tool message, right after the turn, in call order.",
                    at,
                )
            if has_call_ids and result.call_id != call.id:
                earlier = (_result_at(messages, index + 1 + before) for before in range(position))
                answered = {done.call_id for done in earlier if done is not None}
                if result.call_id in {other.id for other in calls} - answered:
                    return Problem(
                        f"message {at} answers {result.call_id}, but the {nth} call of message {index} is "
                        f"{describe_call(call)}: the results are not in call order.",
                        at,
                    )
                return Problem(
                    f"message {at} answers {result.call_id}, but the {nth} call of message {index} is "
                    f"{describe_call(call)}: each result must carry its own call's id.",
                    at,
                    kind="call_id",
                )
            want = expected(call)
            mine = _result_at(sent, at) if at < len(sent) else None
            if want is EXPECT_ERROR:
                if not says_error(result, mine):
                    return Problem(
                        f"{describe_call(call, with_id=False)} produced no output (its tool failed, or it had "
                        f"no entry in the results), but its result {quote(result.content)} does not say so: "
                        "mark it is_error=True or word it as an error (e.g. 'ERROR: ...').",
                        at,
                        kind="error_result",
                    )
            elif result.content != want:
                return Problem(
                    f"the result for {describe_call(call)} is {quote(result.content)}, but {produced} "
                    f"{quote(str(want))} for that call: each result must carry its own call's output."
                    + (
                        ' An empty output is still the tool\'s output: "" is falsy, so test whether the call has '
                        "a result (call.id in results, or `is None`), not whether it is truthy."
                        if want == ""
                        else _why_not_its_own(call, result.content, calls, _turn_contents(messages, index), expected)
                    ),
                    at,
                )
        extra = _result_at(messages, index + 1 + len(calls)) if calls else None
        if extra is not None:
            return Problem(
                f"message {index + 1 + len(calls)} answers {extra.call_id}, which message {index} never called: "
                "send one result per call of resp.tool_calls(), and no others.",
                index + 1 + len(calls),
            )
    return None


def _turn_contents(messages: Sequence[Message], index: int) -> list[str | None]:
    """What the results after the turn at `index` carry, position by position (None where none is)."""
    results = (_result_at(messages, index + 1 + position) for position in range(len(messages[index].tool_calls())))
    return [result.content if result is not None else None for result in results]


def _why_not_its_own(
    call: ToolCall,
    content: str,
    calls: Sequence[ToolCall],
    contents: Sequence[str | None],
    expected: Callable[[ToolCall], object],
) -> str:
    """The likely cause when a result carries another call's output: the outputs put in another order
    (each still there once: collected as they finished, then zipped with the calls), or kept by tool
    name (one call's output twice, the other's lost)."""
    owners = [other for other in calls if other is not call and expected(other) == content]
    if not owners:
        return ""
    wanted = sorted(str(expected(other)) for other in calls)
    if sorted(str(got) for got in contents) == wanted:
        mine = str(expected(call))
        swapped = [other for other in owners if contents[calls.index(other)] == mine]
        which = (
            f"the outputs of {describe_call(call, with_id=False)} and {describe_call(swapped[0], with_id=False)} "
            "are swapped"
            if swapped
            else "every output is there once, in another order than the calls"
        )
        return (
            f" Nothing was lost: {which}. Were the outputs put in another order (collected as the calls "
            "finished, with asyncio.as_completed or the done set of asyncio.wait, or sorted) and then paired "
            "with the calls by position? Pair each call with its own output, in the order of "
            "resp.tool_calls() (asyncio.gather returns them in that order)."
        )
    if any(other.name == call.name for other in owners) and contents.count(content) > 1:
        return (
            f" It is the output of another {call.name} call of the same turn: were the outputs kept in a dict "
            f"keyed by tool name? Two calls of {call.name} share the key {call.name!r}, so the second "
            "overwrote the first. Key them by call.id, or pair each call with its output in order."
        )
    return " It is the output of another call of the same turn: pair each call with its own output."


def diagnose(messages: Sequence[Message]) -> Problem | None:
    """The root cause of a rejected conversation, read from the messages the learner sent.

    Providers word the same mistake differently (and Gemini has no ids to complain about), so the
    conversation itself says which rule broke: a result with no turn before it, a turn appended twice,
    a result for an id the turn before it never made.
    """
    made: dict[str, int] = {}
    answered: dict[str, int] = {}
    for index, message in enumerate(messages):
        if message.role == "assistant":
            for call in message.tool_calls():
                if call.id in made:
                    return Problem(
                        f"message {index} repeats the turn of message {made[call.id]} (call {call.id}): the "
                        "assistant turn was appended more than once.",
                        index,
                        "turn_once",
                    )
                made[call.id] = index
            continue
        results = message.tool_results()
        if message.role != "tool" or not results:
            continue
        owner = index - 1
        while owner >= 0 and messages[owner].role == "tool":
            owner -= 1
        turn = messages[owner] if owner >= 0 else None
        if turn is None or turn.role != "assistant" or not turn.tool_calls():
            what = (
                "an assistant turn without tool calls"
                if turn is not None and turn.role == "assistant"
                else (f"a {turn.role} message" if turn is not None else "nothing")
            )
            return Problem(
                f"the results from message {owner + 1} on follow {what}, not the turn that made the calls.",
                owner if turn is not None and turn.role == "assistant" else index,
                "turn_first",
            )
        call_id = results[0].call_id
        if call_id not in {call.id for call in turn.tool_calls()}:
            earlier = f"a call of message {made[call_id]}, an earlier turn" if call_id in made else "an id never called"
            return Problem(
                f"message {index} answers {call_id}, {earlier}, not one of the calls of message {owner}.",
                index,
                "call_id",
            )
        if call_id in answered:
            return Problem(
                f"message {index} answers {call_id} again (message {answered[call_id]} already did): "
                "each call gets exactly one result, under its own id.",
                index,
                "duplicate",
            )
        answered[call_id] = index
    return None


def missing_from_report(text: str, rounds: int, sequences: Sequence[Sequence[str]], tools: set[str]) -> list[str]:
    """What a runaway error leaves out: the bound, the call sequence in order, what to look at."""
    missing = []
    number = _NUMBER_WORDS[rounds] if rounds < len(_NUMBER_WORDS) else str(rounds)
    if not re.search(rf"(?<!\d){rounds}(?!\d)", text) and not re.search(rf"\b{number}\b", text, re.IGNORECASE):
        missing.append(f"the bound it hit: {rounds} (the number of rounds your loop made)")
    found = _named_calls(text, tools)
    if not any(seq and _contains_run(found, list(seq)) for seq in sequences):
        missing.append(f"the call sequence, in order: [{' '.join(sequences[0])}]")
    if not _ADVICE.search(text):
        missing.append("what to look at: tell the reader what to check or change, e.g. 'check what these tools return'")
    return missing


def _named_calls(text: str, tools: set[str]) -> list[str]:
    """The tool names in `text`, in order, with run-length entries (`get_weather x5`) written out."""
    found: list[str] = []
    for match in re.finditer(r"[A-Za-z_][A-Za-z0-9_]*", text):
        if match.group() not in tools:
            continue
        repeated = _REPEATS.match(text, match.end())
        count = int(next(group for group in repeated.groups() if group)) if repeated else 1
        found += [match.group()] * min(count, 100)
    return found


def _contains_run(found: list[str], sequence: list[str]) -> bool:
    width = len(sequence)
    return any(found[start : start + width] == sequence for start in range(len(found) - width + 1))
