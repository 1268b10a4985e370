"""Breaks "run may raise": only KeyError (an unknown tool) is caught, so a tool raising RuntimeError escapes.

Caught by test_a_tool_that_raises_becomes_an_error_result: the RuntimeError from the tool is reported.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(MAX_ROUNDS):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            try:
                output = run(call)
            except KeyError:
                output = f"ERROR: unknown tool {call.name}"
            req.messages.append(skyl.tool_result_message(call.id, output, is_error=output.startswith("ERROR")))
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds")
