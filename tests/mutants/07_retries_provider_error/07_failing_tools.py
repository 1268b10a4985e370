"""Breaks "catch the tool's failure, not the provider's": a refused request is sent again until the bound.

Caught by test_a_refused_request_reaches_the_caller: the same refusal comes back, and the error the
caller finally sees blames the bound instead of the provider.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    for _ in range(MAX_ROUNDS):
        try:
            resp = client.complete(req)
        except skyl.ProviderError:
            continue  # "try again"
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            try:
                req.messages.append(skyl.tool_result_message(call.id, run(call)))
            except Exception as exc:
                req.messages.append(skyl.tool_result_message(call.id, f"ERROR: {exc}", is_error=True))
    raise skyl.ToolLoopError(f"gave up after {MAX_ROUNDS} tool rounds")
