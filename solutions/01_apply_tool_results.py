"""Reference solution for challenge 01: make the ordering mistake impossible."""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    """Append the assistant turn and the results, in the only order every provider accepts."""
    req.messages.append(resp.message)
    for call in resp.tool_calls():
        if call.id in results:
            req.messages.append(skyl.tool_result_message(call.id, results[call.id]))
        else:
            # A call with no result is worse than an error result: the provider rejects the whole
            # turn for an unanswered call, which is much harder to trace back to here.
            req.messages.append(
                skyl.tool_result_message(call.id, "ERROR: no result was produced for this call", is_error=True)
            )
