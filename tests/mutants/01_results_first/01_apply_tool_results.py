"""Breaks "Append resp.Message before any tool result": appends the results, then the turn.

Caught by test_appends_the_turn_then_one_result_per_call: the provider rejects results that come before their turn.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    for call in resp.tool_calls():
        req.messages.append(skyl.tool_result_message(call.id, results.get(call.id, "ERROR: no result")))
    req.messages.append(resp.message)
