"""Challenge 07: failing tools.

Grade it with `pytest challenges/07_failing_tools` or `sandbox check 7`.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    """The bounded tool loop, where `run(call)` may raise: the tool failed, or has an unknown name.

    A failure becomes that call's result, marked as an error, and the loop goes on: the model reads
    the error and may correct itself. No call is skipped. At most 5 requests; raise an exception
    when the bound is hit.
    """
    # TODO: write the loop so that a failing tool becomes an error result instead of a crash.
    raise NotImplementedError
