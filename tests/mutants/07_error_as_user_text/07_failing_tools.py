"""Breaks "the failure becomes that call's result": the error goes back as a user message, so the call has no result.

Caught by test_a_tool_that_raises_becomes_an_error_result: the provider rejects the turn for an unanswered call.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(MAX_ROUNDS):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            try:
                req.messages.append(skyl.tool_result_message(call.id, run(call)))
            except Exception as exc:
                req.messages.append(skyl.user_text(f"The tool {call.name} failed: {exc}"))
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds")
