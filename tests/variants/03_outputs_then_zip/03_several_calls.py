"""Correct: runs every call first, then appends the turn and the outputs zipped back to their calls."""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(5):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        outputs = list(map(run, calls))
        req.messages.append(resp.message)
        for call, output in zip(calls, outputs, strict=True):
            req.messages.append(skyl.tool_result_message(call.id, output))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
