"""Breaks "one tool message per call": after the calls' results it also sends the dict's entries for ids never called.

Caught by a grader that passes results with extra keys: the provider rejects a result for an id the turn did not call.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(resp.message)
    called = set()
    for call in resp.tool_calls():
        called.add(call.id)
        output = results.get(call.id)
        if output is None:
            req.messages.append(skyl.tool_result_message(call.id, "ERROR: no result", is_error=True))
        else:
            req.messages.append(skyl.tool_result_message(call.id, output))
    for call_id, output in results.items():  # "so that nothing is lost"
        if call_id not in called:
            req.messages.append(skyl.tool_result_message(call_id, output))
