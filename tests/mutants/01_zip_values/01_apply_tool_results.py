"""Breaks "one tool message per call, each with its own output": outputs paired with calls by position.

Caught by test_results_follow_the_calls_not_the_dict: the dict's order is not the calls' order, so
each call gets another call's output.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(resp.message)
    for call, output in zip(resp.tool_calls(), results.values(), strict=False):
        req.messages.append(skyl.tool_result_message(call.id, output))
