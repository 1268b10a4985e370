"""Breaks "the failure becomes an error result": the exception's text alone, neither flagged nor
worded as an error (str(KeyError('get_time')) is just "'get_time'").

Caught by test_a_tool_that_raises_becomes_an_error_result and test_an_unknown_tool_becomes_an_error_result:
the model cannot tell the result is a failure.
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
                output = str(exc)
            req.messages.append(skyl.tool_result_message(call.id, output))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
