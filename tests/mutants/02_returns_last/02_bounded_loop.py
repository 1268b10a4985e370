"""Breaks "raise an exception when the bound is hit": returns the last response, which still asks for tools.

Caught by test_raises_once_the_bound_is_hit: it returned a Response while the model was still asking for tools.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    resp = client.complete(req)
    for _ in range(4):
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
        resp = client.complete(req)
    return resp
