"""Correct: a missing result says it is an error in its text, without the is_error flag."""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(resp.message)
    for call in resp.tool_calls():
        output = results.get(call.id, f"Error: {call.name} returned nothing.")
        req.messages.append(skyl.tool_result_message(call.id, output))
