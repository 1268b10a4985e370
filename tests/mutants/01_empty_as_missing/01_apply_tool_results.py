"""Breaks "one result per call, carrying its own output": an empty output is taken for a missing one, and the call
is answered with an error the tool never raised.

Caught by test_an_empty_output_is_a_result_like_any_other: search_docs returned "", and the result says it failed.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(resp.message)
    for call in resp.tool_calls():
        output = results.get(call.id)
        if output:
            req.messages.append(skyl.tool_result_message(call.id, output))
        else:
            req.messages.append(skyl.tool_result_message(call.id, "ERROR: no result for this call", is_error=True))
