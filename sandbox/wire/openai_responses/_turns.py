"""The state of a Responses request's walk (`_parse`): the neutral turns being built, where each call,
output and item id sits, and what a walked chain leaves for a `previous_response_id` continuation
(`_chain`). Plain data; touches nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...messages._types import Message, Part, Role

__all__ = ["START", "ItemRef", "Turn", "Walked"]


@dataclass
class Turn:
    """A neutral message being built; assistant items that follow each other share one."""

    role: Role
    path: str
    parts: list[Part] = field(default_factory=list)

    def message(self) -> Message:
        return Message(self.role, self.parts)


@dataclass(frozen=True)
class ItemRef:
    """Where a call, an output or an item id sits: its input index and its neutral message."""

    key: str
    item: int
    message: int
    item_type: str = ""


@dataclass(frozen=True)
class Walked:
    """What the walk over a stored chain's items left (its inputs, then its answer's items), so that a
    `previous_response_id` continuation walks only its own `input` (`parse_continuing`): the items
    were checked when they arrived, and the answer's are the fake's own. Immutable: any number of
    continuations may share it."""

    turns: tuple[Turn, ...]
    """The chain's neutral turns (no `instructions`: a continuation brings its own); the last one is
    copied before a continuation's assistant items join it."""
    messages: tuple[Message, ...]
    paths: tuple[str, ...]
    items: int
    """Items walked: a continuation's first item is `input[items]`."""
    open_assistant: bool
    waiting: tuple[ItemRef, ...]
    """Calls without their output yet, in item order. (An output for a call the chain answered is
    taken for one without a call: an error either way, and the whole walk then finds the exact one.)"""
    item_ids: frozenset[str]
    checked: int
    """The messages a request's limits were checked on; those after are the answer's."""


START = Walked((), (), (), 0, False, (), frozenset(), 0)
