"""Breaks "the module imports": a missing colon, so no test can call complete().

Caught by every test: the syntax error, with its line, printed once.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(5)
        resp = client.complete(req)
        if not resp.tool_calls():
            return resp
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
