"""Correct, with a while loop and a counter of requests."""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_REQUESTS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    requests = 0
    while requests < MAX_REQUESTS:
        resp = client.complete(req)
        requests += 1
        if not resp.tool_calls():
            return resp
        req.messages.append(resp.message)
        for call in resp.tool_calls():
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise RuntimeError(f"the model still wanted tools after {MAX_REQUESTS} requests")
