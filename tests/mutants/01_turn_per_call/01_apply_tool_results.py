"""Breaks "Append it once per turn, then one tool message per call": appends the turn before every result.

Caught by test_appends_the_turn_then_one_result_per_call[parallel_calls-*]: with one call it looks right,
with three the provider sees the same turn three times.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    for call in resp.tool_calls():
        req.messages.append(resp.message)
        req.messages.append(skyl.tool_result_message(call.id, results.get(call.id, "ERROR: no result")))
