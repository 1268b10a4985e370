"""Correct, as a callable object: the module's apply_tool_results is an instance with __call__."""

from __future__ import annotations

from sandbox import skyl


class ToolResultApplier:
    """Appends a turn and its results; the text for a missing result is configurable."""

    def __init__(self, missing: str = "ERROR: no result was produced for this call") -> None:
        self.missing = missing

    def __call__(self, req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
        req.messages.append(resp.message)
        for call in resp.tool_calls():
            found = call.id in results
            req.messages.append(
                skyl.tool_result_message(call.id, results[call.id] if found else self.missing, is_error=not found)
            )


apply_tool_results = ToolResultApplier()
