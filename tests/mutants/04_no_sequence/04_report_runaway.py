"""Breaks "Hitting the round limit should tell you which tool is misbehaving": the error names no calls.

Caught by test_the_error_names_the_bound_and_the_calls: the error names no call sequence and no advice.
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
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds")
