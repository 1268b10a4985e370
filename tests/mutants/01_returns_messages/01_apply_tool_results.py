"""Breaks the contract "append in place and return None": builds and returns a new list, leaving req alone.

Caught by test_appends_the_turn_then_one_result_per_call: the function returned a list instead of None.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> list[skyl.Message]:
    messages = [*req.messages, resp.message]
    for call in resp.tool_calls():
        messages.append(skyl.tool_result_message(call.id, results.get(call.id, "ERROR: no result")))
    return messages
