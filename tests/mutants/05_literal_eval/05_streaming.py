"""Breaks "parse each call's arguments as JSON": the collector reads them with ast.literal_eval, as Python, which
knows True but not JSON's true.

Caught by test_collect_stream_rebuilds_the_turn[json_arguments-*] and
test_complete_streams_every_turn[json_arguments-*]: its arguments hold true and false, and literal_eval raises
ValueError.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from sandbox import skyl

MAX_ROUNDS = 5


def collect_stream(stream: Iterable[skyl.StreamEvent]) -> skyl.Response:
    """Consume `stream` and return the turn it carried, as `client.complete()` would have."""
    text: list[str] = []
    calls: dict[int, tuple[str, str, list[str]]] = {}  # index -> (id, name, argument fragments)
    end: skyl.MessageEnd | None = None
    for event in stream:
        match event:
            case skyl.TextDelta():
                text.append(event.text)
            case skyl.ToolCallStart():
                calls[event.index] = (event.id, event.name, [])
            case skyl.ToolCallDelta():
                calls[event.index][2].append(event.arguments)
            case skyl.MessageEnd():
                end = event
    if end is None:
        raise skyl.ToolLoopError("the stream ended before its MessageEnd event: the turn is incomplete")
    parts: list[skyl.Part] = [skyl.Text("".join(text))] if text else []
    for index in sorted(calls):
        call_id, name, fragments = calls[index]
        # The arguments are one JSON document split over many fragments: parse once, at the end.
        arguments = "".join(fragments)
        parts.append(skyl.ToolCall(call_id, name, ast.literal_eval(arguments) if arguments else {}))
    return skyl.Response(
        message=skyl.Message("assistant", parts),
        stop_reason=end.stop_reason,
        usage=end.usage,
        model=end.model,
        id=end.id,
    )


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    """The bounded loop, streaming every turn and rebuilding it with collect_stream()."""
    history: list[str] = []
    for _ in range(MAX_ROUNDS):
        resp = collect_stream(client.stream(req))
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            history.append(call.name)
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError(
        f"gave up after {MAX_ROUNDS} tool rounds; call sequence was [{' '.join(history)}]: "
        "check what these tools return"
    )
