"""Breaks "Each ToolResultMessage carries its own CallID": every result reuses the first call's id.

Caught by test_appends_the_turn_then_one_result_per_call[parallel_calls-*]: the provider pairs results by id.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(resp.message)
    calls = resp.tool_calls()
    for call in calls:
        req.messages.append(skyl.tool_result_message(calls[0].id, results.get(call.id, "ERROR: no result")))
