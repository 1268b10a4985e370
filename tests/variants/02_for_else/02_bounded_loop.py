"""Correct, with for/else: the else branch runs only when the bound was hit."""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(5):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if len(calls) == 0:
            break
        req.messages.append(resp.message)
        req.messages.extend(skyl.tool_result_message(call.id, run(call)) for call in calls)
    else:
        raise skyl.ToolLoopError("gave up after 5 tool rounds")
    return resp
