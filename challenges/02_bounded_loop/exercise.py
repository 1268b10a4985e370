"""Challenge 02: the loop, bounded.

Grade it with `pytest challenges/02_bounded_loop` or `sandbox check 2`.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    """Send `req` until the model stops asking for tools, and return its final response.

    Each round: send the request; a response without tool calls is the answer, return it. Otherwise
    append the assistant turn, then one result per call with `run(call)` as its output. Make at most
    5 requests: when the bound is hit, raise an exception (`skyl.ToolLoopError` fits).
    """
    # TODO: write the bounded tool loop.
    raise NotImplementedError
