"""Correct, building a new list and assigning it back to req.messages (the caller holds req, not the list)."""

from __future__ import annotations

from sandbox import skyl


def _result(call: skyl.ToolCall, results: dict[str, str]) -> skyl.Message:
    output = results.get(call.id)
    if output is None:
        return skyl.tool_result_message(call.id, f"error: no result for {call.name}", is_error=True)
    return skyl.tool_result_message(call.id, output)


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages = [*req.messages, resp.message, *(_result(call, results) for call in resp.tool_calls())]
