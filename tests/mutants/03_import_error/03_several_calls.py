"""Breaks "the module imports": a helper skyl does not have, so no test can call complete().

Caught by every test: the ImportError, with the learner's line, printed once.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl
from sandbox.skyl import tool_result


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(5):
        resp = client.complete(req)
        if not resp.tool_calls():
            return resp
        req.messages.append(resp.message)
        for call in resp.tool_calls():
            req.messages.append(tool_result(call.id, run(call)))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
