"""Breaks "one tool message per call, in call order": answers every call, but in the results dict's order.

Caught by test_results_follow_the_calls_not_the_dict: the results arrive in an order other than the calls'.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(resp.message)
    called = [call.id for call in resp.tool_calls()]
    for call_id, output in results.items():
        if call_id in called:
            req.messages.append(skyl.tool_result_message(call_id, output))
    for call_id in called:
        if call_id not in results:
            req.messages.append(skyl.tool_result_message(call_id, "ERROR: no result", is_error=True))
