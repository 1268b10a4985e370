"""Breaks the challenge's point ("rebuild the turn yourself"): collect_stream hands the stream to skyl.collect_stream.

Caught by test_collect_stream_rebuilds_the_turn: skyl.collect_stream is off limits in this challenge.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sandbox import skyl


def collect_stream(stream: Iterable[skyl.StreamEvent]) -> skyl.Response:
    return skyl.collect_stream(stream)


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
