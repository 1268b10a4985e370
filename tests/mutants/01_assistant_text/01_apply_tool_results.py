"""Breaks "Never reconstruct the turn with AssistantText; it drops the calls": appends assistant_text(resp.text()).

Caught by test_appends_the_turn_then_one_result_per_call: the provider rejects the results, which answer nothing.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(skyl.assistant_text(resp.text()))
    for call in resp.tool_calls():
        req.messages.append(skyl.tool_result_message(call.id, results.get(call.id, "ERROR: no result")))
