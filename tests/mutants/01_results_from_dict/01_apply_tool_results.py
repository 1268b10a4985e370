"""Breaks "one tool message per call, in call order": walks the results dict instead of resp.tool_calls().

Caught by test_results_follow_the_calls_not_the_dict (the dict's order is not the calls' order) and
test_a_call_without_a_result_gets_an_error_result (a call missing from the dict gets nothing).
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(resp.message)
    for call_id, output in results.items():
        req.messages.append(skyl.tool_result_message(call_id, output))
