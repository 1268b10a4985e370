"""Breaks "the loop goes on": a failing tool ends the loop with an exception instead of an error result.

Caught by test_a_tool_that_raises_becomes_an_error_result: it raised instead of letting the model recover.
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
                output = run(call)
            except Exception as exc:
                raise skyl.ToolLoopError(f"tool {call.name} failed: {exc}") from exc
            req.messages.append(skyl.tool_result_message(call.id, output))
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds")
