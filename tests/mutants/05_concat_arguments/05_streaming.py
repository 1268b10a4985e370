"""Breaks "fragments of different calls are never confused": one buffer collects the argument fragments of every call.

Caught by test_collect_stream_rebuilds_the_turn[parallel_calls-*]: the joined JSON of three calls is not one object.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from sandbox import skyl


def collect_stream(stream: Iterable[skyl.StreamEvent]) -> skyl.Response:
    text: list[str] = []
    starts: list[skyl.ToolCallStart] = []
    fragments: list[str] = []
    end: skyl.MessageEnd | None = None
    for event in stream:
        if isinstance(event, skyl.TextDelta):
            text.append(event.text)
        elif isinstance(event, skyl.ToolCallStart):
            starts.append(event)
        elif isinstance(event, skyl.ToolCallDelta):
            fragments.append(event.arguments)
        elif isinstance(event, skyl.MessageEnd):
            end = event
    assert end is not None, "the stream ended without MessageEnd"
    parts: list[skyl.Part] = [skyl.Text("".join(text))] if text else []
    for start in starts:
        parts.append(skyl.ToolCall(start.id, start.name, json.loads("".join(fragments))))
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
