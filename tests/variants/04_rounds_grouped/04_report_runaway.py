"""Correct: the calls grouped per round (round 1: get_weather; round 2: ...), still in order."""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    rounds: list[list[str]] = []
    for _ in range(MAX_ROUNDS):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        rounds.append([call.name for call in calls])
        req.messages.append(resp.message)
        for call in calls:
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    summary = "; ".join(f"round {number}: {', '.join(names)}" for number, names in enumerate(rounds, 1))
    raise skyl.ToolLoopError(f"no answer after {MAX_ROUNDS} rounds ({summary}). Check what these tools return.")
