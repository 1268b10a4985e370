"""Breaks "the call sequence, in order": a count per tool name (collections.Counter) loses the order.

Caught by test_the_error_names_the_bound_and_the_calls[six_rounds-*]: six different tools in a row
read as a tally, not a sequence.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    counts: Counter[str] = Counter()
    for _ in range(MAX_ROUNDS):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            counts[call.name] += 1
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    tally = ", ".join(f"{name}: {count}" for name, count in sorted(counts.items()))
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} rounds ({tally}); check what these tools return")
