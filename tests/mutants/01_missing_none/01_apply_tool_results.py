"""Breaks "a call with no result gets an error result": the missing result becomes the text "None".

Caught by test_a_call_without_a_result_gets_an_error_result: "None" does not say the call failed.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    req.messages.append(resp.message)
    for call in resp.tool_calls():
        req.messages.append(skyl.tool_result_message(call.id, str(results.get(call.id))))
