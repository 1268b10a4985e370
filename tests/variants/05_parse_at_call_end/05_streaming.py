"""Correct: each call's arguments are parsed when its ToolCallEnd arrives."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from sandbox import skyl


def collect_stream(stream: Iterable[skyl.StreamEvent]) -> skyl.Response:
    texts: list[str] = []
    pending: dict[int, tuple[skyl.ToolCallStart, list[str]]] = {}
    done: dict[int, skyl.ToolCall] = {}
    end: skyl.MessageEnd | None = None
    for event in stream:
        if isinstance(event, skyl.TextDelta):
            texts.append(event.text)
        elif isinstance(event, skyl.ToolCallStart):
            pending[event.index] = (event, [])
        elif isinstance(event, skyl.ToolCallDelta):
            pending[event.index][1].append(event.arguments)
        elif isinstance(event, skyl.ToolCallEnd):
            start, pieces = pending.pop(event.index)
            arguments: dict[str, Any] = json.loads("".join(pieces)) if pieces else {}
            done[event.index] = skyl.ToolCall(start.id, start.name, arguments)
        elif isinstance(event, skyl.MessageEnd):
            end = event
    assert end is not None and not pending, "the stream ended in the middle of the turn"
    parts: list[skyl.Part] = [skyl.Text("".join(texts))] if texts else []
    parts.extend(done[index] for index in sorted(done))
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
