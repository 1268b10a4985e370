"""Breaks "MessageEnd carries the stop reason, usage, model and id": it ignores MessageEnd and guesses
the stop reason from the calls.

Caught by test_collect_stream_rebuilds_the_turn: usage, model and id are missing, and on
stop_reason_mismatch the guessed stop reason is not the provider's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from sandbox import skyl


def collect_stream(stream: Iterable[skyl.StreamEvent]) -> skyl.Response:
    text = ""
    calls: dict[int, list[str]] = {}
    for event in stream:
        if isinstance(event, skyl.TextDelta):
            text += event.text
        elif isinstance(event, skyl.ToolCallStart):
            calls[event.index] = [event.id, event.name, ""]
        elif isinstance(event, skyl.ToolCallDelta):
            calls[event.index][2] += event.arguments
    tool_calls = [skyl.ToolCall(i, name, json.loads(args or "{}")) for i, name, args in calls.values()]
    parts: list[skyl.Part] = [skyl.Text(text)] if text else []
    stop = skyl.StopReason.TOOL_USE if tool_calls else skyl.StopReason.END_TURN
    return skyl.Response(skyl.Message("assistant", [*parts, *tool_calls]), stop)


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(5):
        resp = collect_stream(client.stream(req))
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
