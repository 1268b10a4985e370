"""How a turn rebuilt from a stream (challenges 05 and 09) differs from the one the stream carried: its
text, its calls, its reasoning, the order of its parts, and what only MessageEnd knows.

Reads the learner's returned Response (already type-checked by the verdicts) and the reference the
grader rebuilt itself; touches nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...messages._types import Response, Text, ToolCall
from ._transcript import describe_call, quote

__all__ = ["differences_from"]


def differences_from(mine: Response, reference: Response) -> list[str]:
    """Each way `mine` is not the turn the stream carried, one line each; none when it is."""
    found = []
    if mine.message.role != "assistant":
        found.append(f"role: {mine.message.role!r}, expected 'assistant'")
    if mine.text() != reference.text():
        found.append(f"text: {quote(mine.text())}, expected {quote(reference.text())}")
    want = [(call.id, call.name, dict(call.arguments)) for call in reference.tool_calls()]
    calls = mine.tool_calls()
    if not all(isinstance(call, ToolCall) for call in calls):
        found.append("tool calls: build each one as skyl.ToolCall(id, name, arguments)")
    elif not all(isinstance(call.arguments, Mapping) for call in calls):
        found.append("tool calls: arguments must be a dict: parse the joined JSON fragments with json.loads")
    else:
        got = [(call.id, call.name, dict(call.arguments)) for call in calls]
        if got != want:
            found.append(
                f"tool calls: [{', '.join(describe_call(call) for call in calls)}], expected "
                f"[{', '.join(describe_call(call) for call in reference.tool_calls())}]"
            )
    reasoning = _reasoning_differences(mine, reference)
    found += reasoning or _order_differences(mine, reference)
    # What MessageEnd carries: copied from the stream, never guessed from the calls.
    for name in ("stop_reason", "usage", "model", "id"):
        mine_value, carried = getattr(mine, name, None), getattr(reference, name)
        if mine_value != carried:
            found.append(f"{name}: {mine_value!r}, expected {carried!r} (from MessageEnd)")
    return found


def _order_differences(mine: Response, reference: Response) -> list[str]:
    """Where the text sits relative to the calls: sent back as rebuilt, a turn whose prose follows its
    calls is not the turn the model made. Consecutive parts of a kind count as one, empty text as none."""
    names = {"text": "text", "tool_call": "calls", "reasoning": "reasoning"}

    def kinds(response: Response) -> list[str]:
        shown: list[str] = []
        for part in response.message.content:
            if isinstance(part, Text) and not part.text:
                continue
            if shown[-1:] != [names.get(part.kind, part.kind)]:
                shown.append(names.get(part.kind, part.kind))
        return shown

    got, want = kinds(mine), kinds(reference)
    if got != want and sorted(got) == sorted(want):
        return [
            f"part order: {', '.join(got)}; expected {', '.join(want)}: keep the parts in the order the stream "
            "sent them (its text came before its calls)"
        ]
    return []


def _reasoning_differences(mine: Response, reference: Response) -> list[str]:
    """A reasoning model's turn: the same reasoning parts, unchanged, before the calls they led to."""
    want = [part.data() for part in reference.message.reasoning()]
    got = [part.data() for part in mine.message.reasoning()]
    if got != want:
        return [
            f"reasoning: {len(got)} part(s), expected the {len(want)} the stream carried, unchanged "
            "(each ReasoningEnd's event.reasoning)"
        ]
    order = [part.kind for part in mine.message.content if part.kind != "text"]
    expected = [part.kind for part in reference.message.content if part.kind != "text"]
    if got and order != expected:
        return [f"order of parts: {', '.join(order)}; expected {', '.join(expected)}: reasoning first, as it arrived"]
    return []
