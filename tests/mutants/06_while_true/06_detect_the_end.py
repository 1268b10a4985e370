"""Breaks "Loop until resp.tool_calls() is empty, with a hard bound": ends on the call list, but never gives up.

Caught by test_raises_once_the_bound_is_hit: the sandbox's request budget stops the runaway.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    while True:
        resp = client.complete(req)
        if not resp.tool_calls():
            return resp
        req.messages.append(resp.message)
        for call in resp.tool_calls():
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
