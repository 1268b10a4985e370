"""Challenge 03: several calls in one turn.

Grade it with `pytest challenges/03_several_calls` or `sandbox check 3`.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    """The bounded tool loop of challenge 02, graded on turns that make several calls at once.

    A turn may ask for several tools. Append its assistant message once, then one result per call,
    in the order of `resp.tool_calls()`, each paired with its call by `call.id`. At most 5 requests;
    raise an exception when the bound is hit.
    """
    # TODO: write the loop (start from your 02) so a turn with several calls is answered right.
    raise NotImplementedError
