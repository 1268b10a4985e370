"""Breaks "a missing result becomes an error result": "no result", neither flagged nor worded as an error.

Caught by test_a_call_without_a_result_gets_an_error_result: a model can read "no result" as an empty
answer and ask again; the result must say it is an error, or carry is_error=True.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(resp.message)
    for call in resp.tool_calls():
        req.messages.append(skyl.tool_result_message(call.id, results.get(call.id, "no result")))
