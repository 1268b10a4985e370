"""Correct: the sequence as JSON, in a message that spans several lines."""

from __future__ import annotations

import json
from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    history: list[str] = []
    for _ in range(MAX_ROUNDS):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            history.append(call.name)
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError(
        f"tool loop bound reached (max_rounds={MAX_ROUNDS})\n"
        f"calls: {json.dumps(history)}\n"
        "hint: verify what these tools produce; a repeated call usually means unusable output"
    )
