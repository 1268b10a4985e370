"""Breaks "nothing is skipped": after a failing call it answers with the error and drops the rest of the turn.

Caught by test_any_failing_calls_become_error_results only: in the catalogue a failing call is never
followed by another.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(5):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            try:
                output = run(call)
            except Exception as exc:
                req.messages.append(skyl.tool_result_message(call.id, f"ERROR: {exc}", is_error=True))
                break
            req.messages.append(skyl.tool_result_message(call.id, output))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
