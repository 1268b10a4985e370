"""Breaks "call sequence was [get_weather get_weather ...]": the error lists call ids, which say nothing about the tool.

Caught by test_the_error_names_the_bound_and_the_calls: no tool name appears in the error.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    history: list[str] = []
    for _ in range(MAX_ROUNDS):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            history.append(call.id)
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError(
        f"gave up after {MAX_ROUNDS} tool rounds; call sequence was {history}: check what these tools return"
    )
