"""Reference solution for challenge 03: several calls in one turn.

The lesson's loop already handles them: the assistant turn is appended outside the loop over the
calls, and each result carries its own call's id.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    """Send `req` until the model stops asking for tools; give up after MAX_ROUNDS requests."""
    for _ in range(MAX_ROUNDS):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)  # once per turn, however many calls it holds
        for call in calls:  # then one result per call, in call order
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds")
