"""Breaks "MessageEnd carries the stop reason": the rebuilt turn always says END_TURN.

Caught by test_collect_stream_rebuilds_the_turn[single_call-*]: the stop reason differs from the stream's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from sandbox import skyl


def collect_stream(stream: Iterable[skyl.StreamEvent]) -> skyl.Response:
    text: list[str] = []
    calls: dict[int, tuple[str, str, list[str]]] = {}
    for event in stream:
        if isinstance(event, skyl.TextDelta):
            text.append(event.text)
        elif isinstance(event, skyl.ToolCallStart):
            calls[event.index] = (event.id, event.name, [])
        elif isinstance(event, skyl.ToolCallDelta):
            calls[event.index][2].append(event.arguments)
    parts: list[skyl.Part] = [skyl.Text("".join(text))] if text else []
    for index in sorted(calls):
        call_id, name, fragments = calls[index]
        parts.append(skyl.ToolCall(call_id, name, json.loads("".join(fragments) or "{}")))
    return skyl.Response(skyl.Message("assistant", parts), skyl.StopReason.END_TURN)


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
