"""Breaks "keep the signature": complete(client, req) forgets `run`, so the grader cannot call it.

Caught by every test: a TypeError at the call, answered with the signature the starter file gives.
"""

from __future__ import annotations

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request) -> skyl.Response:
    for _ in range(5):
        resp = client.complete(req)
        if not resp.tool_calls():
            return resp
        req.messages.append(resp.message)
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
