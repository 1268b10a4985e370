"""Correct, written with += on req.messages, one statement for the turn and one for the results."""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages += [resp.message]
    req.messages += [
        skyl.tool_result_message(call.id, results[call.id])
        if call.id in results
        else skyl.tool_result_message(call.id, "ERROR: the tool produced nothing", is_error=True)
        for call in resp.tool_calls()
    ]
