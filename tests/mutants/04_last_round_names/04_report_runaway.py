"""Breaks "Track which tools were called each round": the error lists only the last round's calls.

Caught by test_the_error_names_the_bound_and_the_calls: one name is not the sequence [get_weather get_weather ...].
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    calls: list[skyl.ToolCall] = []
    for _ in range(MAX_ROUNDS):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    names = " ".join(call.name for call in calls)
    raise skyl.ToolLoopError(
        f"gave up after {MAX_ROUNDS} tool rounds; the model was calling [{names}]: check what these tools return"
    )
