"""Correct: one numbered line per call, then the advice."""

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
    lines = "\n".join(f"  {number}. {name}" for number, name in enumerate(history, 1))
    raise skyl.ToolLoopError(
        f"gave up after {MAX_ROUNDS} tool rounds. Calls, in order:\n{lines}\nLook at what those tools returned."
    )
