"""Correct, asking forgiveness: a KeyError for a missing id becomes an error result."""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(resp.message)
    for call in resp.tool_calls():
        try:
            message = skyl.tool_result_message(call.id, results[call.id])
        except KeyError:
            message = skyl.tool_result_message(call.id, "missing: the caller supplied no output", is_error=True)
        req.messages.append(message)
