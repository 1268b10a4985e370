"""Breaks "then one tool message per call": it answers at most three calls a turn ("models never ask for more").

Caught by test_any_number_of_calls_in_any_turn only: the catalogue's turns have three calls at most,
generated ones up to eight.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_PARALLEL = 3


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(5):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls[:MAX_PARALLEL]:
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
