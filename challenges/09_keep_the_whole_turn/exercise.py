"""Challenge 09: keep the whole turn.

Grade it with `pytest challenges/09_keep_the_whole_turn` or `sandbox check 9`. Write the assembly
yourself: `skyl.collect_stream` is off limits in this challenge.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sandbox import skyl


def collect_stream(stream: Iterable[skyl.StreamEvent]) -> skyl.Response:
    """Consume `stream` and return the whole turn it carried, as `client.complete()` would have.

    Events: `ReasoningDelta` (a fragment of the reasoning's text, to show), `ReasoningEnd` (a
    reasoning part complete: `event.reasoning` is the part to keep), `TextDelta`, `ToolCallStart`,
    `ToolCallDelta`, `ToolCallEnd` and `MessageEnd`, as in challenge 05.
    """
    # TODO: rebuild the whole turn (every part, in the order the stream announced it), then write complete().
    raise NotImplementedError


def complete(
    client: skyl.Client, req: skyl.Request, run: Callable[[skyl.ToolCall], str], stream: bool = False
) -> skyl.Response:
    """The bounded tool loop against a reasoning model: at most 5 requests, each turn appended whole.
    With `stream`, every turn is `collect_stream(client.stream(req))`."""
    raise NotImplementedError
