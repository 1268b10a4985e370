"""Breaks "then one tool message per call": only the first call of the turn is answered.

Caught by test_appends_the_turn_then_one_result_per_call[parallel_calls-*]: the other calls have no result.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(resp.message)
    call = resp.tool_calls()[0]
    req.messages.append(skyl.tool_result_message(call.id, results.get(call.id, "ERROR: no result")))
