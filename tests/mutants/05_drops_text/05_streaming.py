"""Breaks "rebuild the assistant turn from the events you saw": TextDelta events are ignored.

Caught by test_collect_stream_rebuilds_the_turn[plain_text-*]/[single_call-*]: the rebuilt text differs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from sandbox import skyl


def collect_stream(stream: Iterable[skyl.StreamEvent]) -> skyl.Response:
    calls: dict[int, tuple[str, str, list[str]]] = {}
    end: skyl.MessageEnd | None = None
    for event in stream:
        if isinstance(event, skyl.ToolCallStart):
            calls[event.index] = (event.id, event.name, [])
        elif isinstance(event, skyl.ToolCallDelta):
            calls[event.index][2].append(event.arguments)
        elif isinstance(event, skyl.MessageEnd):
            end = event
    assert end is not None, "the stream ended without MessageEnd"
    parts: list[skyl.Part] = []
    for index in sorted(calls):
        call_id, name, fragments = calls[index]
        parts.append(skyl.ToolCall(call_id, name, json.loads("".join(fragments) or "{}")))
    return skyl.Response(skyl.Message("assistant", parts), end.stop_reason, end.usage, end.model, end.id)


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
