"""Challenge 04: report a runaway loop usefully.

Grade it with `pytest challenges/04_report_runaway` or `sandbox check 4`.
"""

from __future__ import annotations

from collections.abc import Callable

from sandbox import skyl


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    """The bounded tool loop, whose error says which tool is misbehaving.

    At most 5 requests. When the bound is hit, raise an exception whose message names the bound,
    the sequence of tool calls in order (e.g. `[get_weather get_weather get_weather ...]`), and
    tells the reader to check what those tools return.
    """
    # TODO: write the loop, keeping the call names of every round for the error message.
    raise NotImplementedError
