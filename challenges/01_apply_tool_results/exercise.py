"""Challenge 01: make the ordering mistake impossible.

Grade it with `pytest challenges/01_apply_tool_results` or `sandbox check 1`.
"""

from __future__ import annotations

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    """Append the model's turn and the tool results to `req.messages`, in the order providers accept.

    `results` maps a call id to that call's output. Append `resp.message` once, then one tool
    message per call of `resp.tool_calls()`, in call order. A call with no entry in `results` gets a
    result marked as an error (`is_error=True`): never silence, never a crash. Return None.
    """
    # TODO: append the assistant turn, then one result per call, as the docstring says.
    raise NotImplementedError
