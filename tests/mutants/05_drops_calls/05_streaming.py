"""Breaks "rebuild the assistant turn from the events you saw": the rebuilt turn keeps the text and drops the calls.

Caught by test_collect_stream_rebuilds_the_turn[single_call-*]/[parallel_calls-*] (the turn has no tool calls) and
test_complete_streams_every_turn (the loop stops at the first turn, which was not the answer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sandbox import skyl


def collect_stream(stream: Iterable[skyl.StreamEvent]) -> skyl.Response:
    text: list[str] = []
    end: skyl.MessageEnd | None = None
    for event in stream:
        if isinstance(event, skyl.TextDelta):
            text.append(event.text)
        elif isinstance(event, skyl.MessageEnd):
            end = event
    assert end is not None, "the stream ended without MessageEnd"
    return skyl.Response(skyl.assistant_text("".join(text)), end.stop_reason, end.usage, end.model, end.id)


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
