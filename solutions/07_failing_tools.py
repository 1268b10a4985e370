"""Reference solution for challenge 07: a failing tool becomes an error result, and the loop goes on."""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl

MAX_ROUNDS = 5


def _result(call: skyl.ToolCall, run: Callable[[skyl.ToolCall], str]) -> skyl.Message:
    """The call's result; a tool that raises is answered with its error, which the model can act on."""
    try:
        return skyl.tool_result_message(call.id, run(call))
    except Exception as exc:  # any tool failure is information for the model, not a reason to stop
        return skyl.tool_result_message(call.id, f"ERROR: {call.name} failed: {exc!r}", is_error=True)


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    """Send `req` until the model stops asking for tools; give up after MAX_ROUNDS requests."""
    history: list[str] = []
    for _ in range(MAX_ROUNDS):
        resp = client.complete(req)
        calls = resp.tool_calls()
        if not calls:
            return resp
        req.messages.append(resp.message)
        for call in calls:
            history.append(call.name)
            req.messages.append(_result(call, run))
    raise skyl.ToolLoopError(
        f"gave up after {MAX_ROUNDS} tool rounds; call sequence was [{' '.join(history)}]: "
        "check what these tools return"
    )
