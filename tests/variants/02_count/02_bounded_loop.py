"""Correct, with itertools.count and the bound checked at the top of each round."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for round_number in itertools.count(1):
        if round_number > MAX_ROUNDS:
            break
        resp = client.complete(req)
        if not (calls := resp.tool_calls()):
            return resp
        outputs = [run(call) for call in calls]
        req.messages.append(resp.message)
        req.messages.extend(skyl.tool_result_message(call.id, out) for call, out in zip(calls, outputs, strict=True))
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} rounds")
