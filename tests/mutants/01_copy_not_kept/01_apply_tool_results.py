"""Breaks "apply_tool_results appends to req.messages": it builds the new history on a copy and drops it.

Caught by test_appends_the_turn_then_one_result_per_call: the request sent next carries neither turn nor results.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    messages = list(req.messages)
    messages.append(resp.message)
    for call in resp.tool_calls():
        messages.append(skyl.tool_result_message(call.id, results.get(call.id, "ERROR: no result")))
