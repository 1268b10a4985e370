"""Correct: a while loop whose condition is the call list itself (walrus), bounded by a counter."""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    resp = client.complete(req)
    requests = 1
    while calls := resp.tool_calls():
        if requests == 5:
            raise skyl.ToolLoopError("5 requests and the model still wants tools")
        req.messages.append(resp.message)
        for call in calls:
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
        resp = client.complete(req)
        requests += 1
    return resp
