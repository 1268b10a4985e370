"""Breaks "Append it once per turn": appends resp.message twice (once "to be safe", once in the usual place).

Caught by test_appends_the_turn_then_one_result_per_call: the provider sees the same turn twice.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(resp.message)
    req.messages.append(resp.message)
    for call in resp.tool_calls():
        req.messages.append(skyl.tool_result_message(call.id, results.get(call.id, "ERROR: no result")))
