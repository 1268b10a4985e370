"""Correct: a collector class that dispatches on event.kind and keeps the parts in arrival order, and a while loop."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from sandbox import skyl


class Turn:
    def __init__(self) -> None:
        self.parts: list[Any] = []  # a str list for text, a Reasoning, or [id, name, fragments] for a call
        self.calls: dict[int, list[Any]] = {}
        self.end: skyl.MessageEnd | None = None

    def feed(self, event: skyl.StreamEvent) -> None:
        if event.kind == "text_delta":
            texts = [part for part in self.parts if isinstance(part, list) and part and part[0] == "text"]
            if texts:
                texts[0].append(event.text)
            else:
                self.parts.append(["text", event.text])
        elif event.kind == "reasoning_end":
            self.parts.append(event.reasoning)
        elif event.kind == "tool_call_start":
            self.calls[event.index] = ["call", event.id, event.name]
            self.parts.append(self.calls[event.index])
        elif event.kind == "tool_call_delta":
            self.calls[event.index].append(event.arguments)
        elif event.kind == "message_end":
            self.end = event

    def response(self) -> skyl.Response:
        assert self.end is not None, "no MessageEnd"
        content: list[skyl.Part] = []
        for part in self.parts:
            if isinstance(part, skyl.Reasoning):
                content.append(part)
            elif part[0] == "text":
                content.append(skyl.Text("".join(part[1:])))
            else:
                arguments = "".join(part[3:])
                content.append(skyl.ToolCall(part[1], part[2], json.loads(arguments) if arguments else {}))
        message = skyl.Message("assistant", content)
        return skyl.Response(message, self.end.stop_reason, self.end.usage, self.end.model, self.end.id)


def collect_stream(stream: Iterable[skyl.StreamEvent]) -> skyl.Response:
    turn = Turn()
    for event in stream:
        turn.feed(event)
    return turn.response()


def complete(
    client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str], stream: bool = False
) -> skyl.Response:
    rounds = 0
    names: list[str] = []
    while rounds < 5:
        rounds += 1
        resp = collect_stream(client.stream(req)) if stream else client.complete(req)
        if not resp.tool_calls():
            return resp
        req.messages.append(resp.message)
        for call in resp.tool_calls():
            names.append(call.name)
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError(f"gave up after 5 tool rounds; call sequence was {names}: check what these tools return")
