"""Breaks "each result carries its own call's output": results are paired with the calls by position in the dict.

Caught by test_results_follow_the_calls_not_the_dict: ids are in call order, but each carries another call's output.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(resp.message)
    outputs = list(results.values())
    for index, call in enumerate(resp.tool_calls()):
        output = outputs[index] if index < len(outputs) else "ERROR: no result"
        req.messages.append(skyl.tool_result_message(call.id, output))
