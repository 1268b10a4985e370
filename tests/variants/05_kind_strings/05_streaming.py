"""Correct: dispatches on each event's kind string, with defaultdicts for the pieces of each call."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable

from sandbox import skyl


def collect_stream(stream: Iterable[skyl.StreamEvent]) -> skyl.Response:
    text = ""
    heads: dict[int, tuple[str, str]] = {}
    fragments: defaultdict[int, str] = defaultdict(str)
    end = None
    for event in stream:
        if event.kind == "text_delta":
            text += event.text
        elif event.kind == "tool_call_start":
            heads[event.index] = (event.id, event.name)
        elif event.kind == "tool_call_delta":
            fragments[event.index] += event.arguments
        elif event.kind == "message_end":
            end = event
    if end is None:
        raise ValueError("stream ended early")
    parts: list[skyl.Part] = [skyl.Text(text)] if text else []
    for index, (call_id, name) in sorted(heads.items()):
        parts.append(skyl.ToolCall(call_id, name, json.loads(fragments[index] or "{}")))
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
