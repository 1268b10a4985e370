"""Correct: outputs are kept in a dict keyed by call id, then appended in call order."""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(5):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        outputs = {call.id: run(call) for call in reversed(calls)}
        req.messages += [resp.message]
        req.messages += [skyl.tool_result_message(call.id, outputs[call.id]) for call in calls]
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
