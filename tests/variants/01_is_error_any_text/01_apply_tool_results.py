"""Correct: a missing result is flagged is_error=True; its text need not say "error"."""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(resp.message)
    for call in resp.tool_calls():
        if call.id in results:
            req.messages.append(skyl.tool_result_message(call.id, results[call.id]))
        else:
            req.messages.append(skyl.tool_result_message(call.id, "n/a", is_error=True))
