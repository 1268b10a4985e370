"""Breaks "each tool result carries its own call id": the result is keyed by the tool's name instead.

Caught by test_appends_the_turn_then_one_result_per_call on the formats with call ids: the provider
cannot pair a result with its call.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(resp.message)
    for call in resp.tool_calls():
        output = results.get(call.id, "ERROR: no result")
        req.messages.append(skyl.tool_result_message(call.name, output))
