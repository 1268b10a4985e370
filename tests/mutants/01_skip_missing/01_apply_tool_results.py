"""Breaks "The missing-result branch matters": a call with no entry in results is silently skipped.

Caught by test_a_call_without_a_result_gets_an_error_result: the provider rejects the turn for an unanswered call.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(resp.message)
    for call in resp.tool_calls():
        if call.id in results:
            req.messages.append(skyl.tool_result_message(call.id, results[call.id]))
