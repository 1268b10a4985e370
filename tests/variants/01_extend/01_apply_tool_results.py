"""Correct, written with list.extend and a comprehension: the turn, then one result per call."""

from __future__ import annotations

from sandbox import skyl

MISSING = "ERROR: no result was produced for this call"


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.extend(
        [
            resp.message,
            *(
                skyl.tool_result_message(call.id, results.get(call.id, MISSING), is_error=call.id not in results)
                for call in resp.tool_calls()
            ),
        ]
    )
