"""A continuation in proportion to what is new: the head start a chain keeps (a `previous_response_id`
chain, an Anthropic message thread, a conversation).

May touch: the wire formats' walks (Responses `Walked`, `parse_continuing`; Anthropic `Thread`,
`continue_thread`), the replay's position and the repeat guard's digest; never the store's bytes
(the store holds a `ContinuationState` beside an entry and counts its size). Each item of a chain was
checked when it arrived, so what reading, replaying and digesting the history left after a response
is kept with it (`ContinuationState`), and its continuation reads, checks and replays only its own `input` (a
thread: its own `messages`), so that a long chain costs no more than a short one. The result is the
one the whole request would get: a continuation that fails anywhere on the short way is checked
again from the start, for the exact error.

A snapshot holds objects, not bytes, so it is counted (`snapshot_size`) against the same bound as
the stored bytes, and snapshots hold at most an eighth of it, the oldest let go first. A chain keeps
one snapshot, its newest response's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...wire import Conversation
from ...wire.anthropic import Thread
from ...wire.openai_responses import LaterWalk, Walked
from .._repeats import Digested
from .._replay import Position
from .._scenario import Scenario

__all__ = ["Replayed", "Resume", "ContinuationState", "snapshot_size"]

SNAPSHOT_BYTES_PER_MESSAGE = 900
"""Memory a snapshot is counted per neutral message beyond its text: the message, its parts, its
walk's turn and path (the `kept` rows of bench/ measure the process's memory against it)."""
SNAPSHOT_BYTES_PER_BYTE = 2
"""And per byte of the JSON the chain's items came from (the text, as `str`)."""
SNAPSHOT_BYTES_PER_ID = 400
"""And per item id a Responses walk holds (its string and set slot): a conversation's items all have
ids."""


@dataclass(frozen=True)
class Replayed:
    """Where the replay and the repeat guard stood after a request's history."""

    key: tuple[str, ...]
    """What they depend on beyond the history: the path, the scenario, the instructions (message 0),
    the reasoning setting (Responses `reasoning`, Anthropic `thinking`). A continuation with another
    key replays from the start."""
    messages: int
    position: Position
    digested: Digested
    turns: int
    """Model turns among those messages (the budget's count)."""


@dataclass(frozen=True)
class ContinuationState:
    """What a response's continuation starts from."""

    walked: Walked | Thread | LaterWalk
    """A `LaterWalk` becomes its `Walked` when a continuation first asks (`LaterWalk.walk`)."""
    replayed: Replayed | None
    chain_bytes: int
    """The JSON bytes of the whole chain: its messages' objects are held by this snapshot."""


@dataclass
class Resume:
    """One Responses request's head start and what it leaves for the next (filled in as it is answered)."""

    walked: Walked | Thread | None = None
    """The chain it continues; None: it starts one (or the chain has no snapshot)."""
    tail_only: bool = False
    """The conversation's `raw` holds only the messages from the chain's answer on (a thread's): a replay
    that cannot go on from the chain's reads the whole request (`full`)."""
    replayed: Replayed | None = None
    chain_bytes: int = 0
    full: Callable[[], Conversation] | None = None
    """The conversation of the whole request, walked the whole way (for an exact error)."""
    parser: Any = None
    """This request's walk, once it succeeded (the answer's items are walked on from it: a Responses
    `_Parser`, an Anthropic `Walk`)."""
    first: int = 0
    """The index of the chain's first message in this request's conversation."""
    out: Replayed | None = None
    """This request's replay, for its answer's continuation."""

    @property
    def checked(self) -> int:
        """Messages whose limits were checked by the chain's earlier requests."""
        return self.first + self.walked.checked if self.walked is not None else 0

    def key(self, path: str, scenario: Scenario, conversation: Conversation) -> tuple[str, ...]:
        raw: Mapping[str, Any] = conversation.raw
        instructions = raw.get("instructions")
        return (path, scenario.name, repr(instructions), repr(raw.get("reasoning")), repr(raw.get("thinking")))

    def replayed_for(self, key: tuple[str, ...]) -> Replayed | None:
        return self.replayed if self.replayed is not None and self.replayed.key == key else None


def snapshot_size(walked: Walked | Thread | LaterWalk, chain_bytes: int) -> int:
    """The memory a snapshot holds, as the store counts it (a `LaterWalk` as the walk it will be)."""
    if isinstance(walked, LaterWalk):
        messages, ids = walked.messages, walked.ids
    else:
        messages, ids = len(walked.messages), len(walked.item_ids) if isinstance(walked, Walked) else 0
    return chain_bytes * SNAPSHOT_BYTES_PER_BYTE + messages * SNAPSHOT_BYTES_PER_MESSAGE + ids * SNAPSHOT_BYTES_PER_ID
