"""Breaks "A sequence like [get_weather get_weather get_weather]": a set of names hides the repetition.

Caught by test_the_error_names_the_bound_and_the_calls[runaway-*]/[runaway_empty-*]: {'get_weather'} is not
the sequence.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    seen: set[str] = set()
    for _ in range(MAX_ROUNDS):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            seen.add(call.name)
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError(
        f"gave up after {MAX_ROUNDS} tool rounds; tools called: {seen}: check what these tools return"
    )
