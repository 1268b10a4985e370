"""Breaks "a call with no result gets an error result, never a crash": results[call.id] raises KeyError.

Caught by test_a_call_without_a_result_gets_an_error_result: the grader reports the KeyError from this file.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(resp.message)
    for call in resp.tool_calls():
        req.messages.append(skyl.tool_result_message(call.id, results[call.id]))
