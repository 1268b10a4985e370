"""Correct: complete() opens each stream as a context manager; collect_stream reads it with next()."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from sandbox import skyl


def collect_stream(stream: Iterable[skyl.StreamEvent]) -> skyl.Response:
    events = iter(stream)
    text, calls, end = [], {}, None
    while (event := next(events, None)) is not None:
        if isinstance(event, skyl.TextDelta):
            text.append(event.text)
        elif isinstance(event, skyl.ToolCallStart):
            calls[event.index] = {"id": event.id, "name": event.name, "json": ""}
        elif isinstance(event, skyl.ToolCallDelta):
            calls[event.index]["json"] += event.arguments
        elif isinstance(event, skyl.MessageEnd):
            end = event
    if end is None:
        raise ValueError("no MessageEnd")
    parts: list[skyl.Part] = [skyl.Text("".join(text))] if text else []
    for index in sorted(calls):
        call = calls[index]
        parts.append(skyl.ToolCall(call["id"], call["name"], json.loads(call["json"] or "{}")))
    return skyl.Response(skyl.Message("assistant", parts), end.stop_reason, end.usage, end.model, end.id)


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(5):
        with client.stream(req) as stream:
            resp = collect_stream(stream)
        if not resp.tool_calls():
            return resp
        req.messages.append(resp.message)
        req.messages.extend(skyl.tool_result_message(call.id, run(call)) for call in resp.tool_calls())
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
