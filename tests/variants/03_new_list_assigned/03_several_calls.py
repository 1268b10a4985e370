"""Correct, assigning a new list back to req.messages each round."""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(5):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        results = [skyl.tool_result_message(call.id, run(call)) for call in calls]
        req.messages = req.messages + [resp.message] + results
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
