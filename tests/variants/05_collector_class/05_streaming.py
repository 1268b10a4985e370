"""Correct: a small collector class fed event by event, and a while loop in complete()."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from sandbox import skyl


class Turn:
    def __init__(self) -> None:
        self.text = ""
        self.calls: list[list[str]] = []  # [id, name, joined arguments], in index order
        self.end: skyl.MessageEnd | None = None

    def feed(self, event: skyl.StreamEvent) -> None:
        match event:
            case skyl.TextDelta(text=text):
                self.text += text
            case skyl.ToolCallStart(index=index, id=call_id, name=name):
                while len(self.calls) <= index:
                    self.calls.append(["", "", ""])
                self.calls[index][:2] = [call_id, name]
            case skyl.ToolCallDelta(index=index, arguments=fragment):
                self.calls[index][2] += fragment
            case skyl.MessageEnd():
                self.end = event

    def response(self) -> skyl.Response:
        if self.end is None:
            raise skyl.ToolLoopError("the stream stopped before MessageEnd")
        parts: list[skyl.Part] = [skyl.Text(self.text)] if self.text else []
        parts += [skyl.ToolCall(i, n, json.loads(a) if a else {}) for i, n, a in self.calls]
        return skyl.Response(
            skyl.Message("assistant", parts), self.end.stop_reason, self.end.usage, self.end.model, self.end.id
        )


def collect_stream(stream: Iterable[skyl.StreamEvent]) -> skyl.Response:
    turn = Turn()
    for event in stream:
        turn.feed(event)
    return turn.response()


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    rounds = 0
    while rounds < 5:
        rounds += 1
        resp = collect_stream(client.stream(req))
        if not resp.tool_calls():
            return resp
        req.messages += [resp.message, *(skyl.tool_result_message(c.id, run(c)) for c in resp.tool_calls())]
    raise skyl.ToolLoopError("gave up after 5 rounds")
