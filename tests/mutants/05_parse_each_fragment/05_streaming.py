"""Breaks "Join them, then parse": each ToolCallDelta fragment is parsed as JSON on its own.

Caught by test_collect_stream_rebuilds_the_turn[single_call-*]: a fragment such as '{"ci' is not JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from sandbox import skyl


def collect_stream(stream: Iterable[skyl.StreamEvent]) -> skyl.Response:
    text: list[str] = []
    calls: dict[int, tuple[str, str, dict[str, Any]]] = {}
    end: skyl.MessageEnd | None = None
    for event in stream:
        if isinstance(event, skyl.TextDelta):
            text.append(event.text)
        elif isinstance(event, skyl.ToolCallStart):
            calls[event.index] = (event.id, event.name, {})
        elif isinstance(event, skyl.ToolCallDelta):
            calls[event.index][2].update(json.loads(event.arguments))
        elif isinstance(event, skyl.MessageEnd):
            end = event
    assert end is not None, "the stream ended without MessageEnd"
    parts: list[skyl.Part] = [skyl.Text("".join(text))] if text else []
    parts += [skyl.ToolCall(call_id, name, arguments) for call_id, name, arguments in calls.values()]
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
