"""Breaks "a failing tool becomes an error result": the error text names the call by its first argument, so a
failing call without arguments raises IndexError inside the except block.

Caught by test_a_failing_call_without_arguments_becomes_an_error_result: get_time() fails, and the loop crashes.
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
                result = skyl.tool_result_message(call.id, run(call))
            except Exception as exc:
                subject = list(call.arguments.values())[0]
                result = skyl.tool_result_message(
                    call.id, f"ERROR: {call.name}({subject}) failed: {exc}", is_error=True
                )
            req.messages.append(result)
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds")
