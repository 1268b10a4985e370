"""Correct: the sequence as a comma-separated list, with the advice first."""

from __future__ import annotations

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
    raise RuntimeError(
        f"Check the output of your tools. The model was still calling them after {MAX_ROUNDS} rounds: "
        f"{', '.join(history)}"
    )
