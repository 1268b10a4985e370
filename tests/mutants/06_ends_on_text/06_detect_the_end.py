"""Breaks "resp.ToolCalls() returning empty is the terminating condition": it stops at the first turn with any prose.

Caught by test_ends_when_the_call_list_is_empty[single_call-*]: "Let me check the weather" came with a call.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(MAX_ROUNDS):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if resp.text() or not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds")
