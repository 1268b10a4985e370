"""Correct: a safe_run helper returns (text, is_error); the loop builds results from it in one comprehension."""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def safe_run(run: Callable[[skyl.ToolCall], str], call: skyl.ToolCall) -> tuple[str, bool]:
    try:
        return run(call), False
    except KeyError:
        return f"unknown tool {call.name!r}", True
    except Exception as exc:
        return f"{call.name} failed: {exc}", True


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    rounds = 0
    while True:
        if rounds == 5:
            raise skyl.ToolLoopError("gave up after 5 tool rounds")
        rounds += 1
        resp = client.complete(req)
        if not resp.tool_calls():
            return resp
        outcomes = [(call, *safe_run(run, call)) for call in resp.tool_calls()]
        req.messages.append(resp.message)
        req.messages += [skyl.tool_result_message(c.id, text, is_error=err) for c, text, err in outcomes]
