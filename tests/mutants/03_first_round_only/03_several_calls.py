"""Breaks "Loop until resp.ToolCalls() is empty": it answers one round, then returns the next response.

Caught by test_answers_every_call_of_every_turn_in_order[parallel_rounds-*]/[multi_step-*]: the returned
response still asks for tools.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    resp = client.complete(req)
    calls = resp.tool_calls()
    if not calls:
        return resp
    req.messages.append(resp.message)
    for call in calls:
        req.messages.append(skyl.tool_result_message(call.id, run(call)))
    return client.complete(req)
