"""Breaks "Loop until resp.ToolCalls() is empty, with a hard bound": the streaming loop has no bound.

Caught by test_complete_is_still_bounded: the sandbox's request budget stops the runaway.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from sandbox import skyl


def collect_stream(stream: Iterable[skyl.StreamEvent]) -> skyl.Response:
    text: list[str] = []
    calls: dict[int, tuple[str, str, list[str]]] = {}
    end: skyl.MessageEnd | None = None
    for event in stream:
        if isinstance(event, skyl.TextDelta):
            text.append(event.text)
        elif isinstance(event, skyl.ToolCallStart):
            calls[event.index] = (event.id, event.name, [])
        elif isinstance(event, skyl.ToolCallDelta):
            calls[event.index][2].append(event.arguments)
        elif isinstance(event, skyl.MessageEnd):
            end = event
    assert end is not None, "the stream ended without MessageEnd"
    parts: list[skyl.Part] = [skyl.Text("".join(text))] if text else []
    for index in sorted(calls):
        call_id, name, fragments = calls[index]
        parts.append(skyl.ToolCall(call_id, name, json.loads("".join(fragments) or "{}")))
    return skyl.Response(skyl.Message("assistant", parts), end.stop_reason, end.usage, end.model, end.id)


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    while True:
        resp = collect_stream(client.stream(req))
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
