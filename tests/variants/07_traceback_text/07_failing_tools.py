"""Correct: a failure's result is the exception as Python prints it, flagged is_error=True."""

from __future__ import annotations

import traceback
from collections.abc import Callable

from sandbox import skyl


def answer(call: skyl.ToolCall, run: Callable[[skyl.ToolCall], str]) -> skyl.Message:
    try:
        return skyl.tool_result_message(call.id, run(call))
    except Exception as exc:
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return skyl.tool_result_message(call.id, text, is_error=True)


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
