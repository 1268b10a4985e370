"""Challenge 06: detect the end.

Grade it with `pytest challenges/06_detect_the_end` or `sandbox check 6`.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    """The bounded tool loop, graded where the stop reason and the call list disagree.

    A turn may carry calls while its stop reason says `max_tokens` or `stop`, and a final answer
    may claim `tool_use` with no calls. Decide when the model is done from the call list alone.
    At most 5 requests; raise an exception when the bound is hit.
    """
    # TODO: write the loop so that it ends exactly when the model stops asking for tools.
    raise NotImplementedError
