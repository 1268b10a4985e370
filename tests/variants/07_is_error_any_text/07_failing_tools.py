"""Correct: a failure is flagged is_error=True; its text ("tool unavailable") need not say "error"."""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def answer(call: skyl.ToolCall, run: Callable[[skyl.ToolCall], str]) -> skyl.Message:
    try:
        return skyl.tool_result_message(call.id, run(call))
    except Exception:
        return skyl.tool_result_message(call.id, "tool unavailable", is_error=True)


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
