"""Correct: a failure is worded as an error ("ERROR: ..."), without the is_error flag."""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def answer(call: skyl.ToolCall, run: Callable[[skyl.ToolCall], str]) -> skyl.Message:
    try:
        output = run(call)
    except Exception as exc:
        output = f"ERROR: {type(exc).__name__}: {exc}"
    return skyl.tool_result_message(call.id, output)


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(5):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            req.messages.append(answer(call, run))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
