"""Correct: the call sequence run-length encoded (`get_weather x5`), as a person would write it in a log."""

from __future__ import annotations

from collections.abc import Callable
from itertools import groupby

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
    runs = ", ".join(f"{name} x{len(list(group))}" for name, group in groupby(history))
    raise skyl.ToolLoopError(
        f"gave up after {MAX_ROUNDS} rounds; calls in order: {runs}. Check what these tools return."
    )
