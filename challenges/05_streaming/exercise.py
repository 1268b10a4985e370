"""Challenge 05: streaming: rebuild the turn.

Grade it with `pytest challenges/05_streaming` or `sandbox check 5`. Write the assembly yourself:
`skyl.collect_stream` is off limits in this challenge.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sandbox import skyl


def collect_stream(stream: Iterable[skyl.StreamEvent]) -> skyl.Response:
    """Consume `stream` and return the turn it carried, as `client.complete()` would have.

    Events: `TextDelta` (a fragment of prose), `ToolCallStart` (a call's id and name, by index),
    `ToolCallDelta` (a fragment of that call's JSON arguments), `ToolCallEnd`, and `MessageEnd`
    (stop reason, usage, model, id).
    """
    # TODO: rebuild the turn from the events here, then write complete() below with it.
    raise NotImplementedError


def complete(client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str]) -> skyl.Response:
    """The bounded tool loop, streaming every turn: `collect_stream(client.stream(req))` replaces
    `client.complete(req)`. At most 5 requests; raise an exception when the bound is hit."""
    raise NotImplementedError
