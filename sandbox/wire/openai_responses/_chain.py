"""A Responses request's walk, kept past the request: what a `previous_response_id` continuation goes on
from (`sandbox.engine.kept._chain` keeps it beside the stored response). Touches only the walk's state and
the answer's stored bytes.

Most stored responses are never continued (a tool loop that sends its whole history; `store` is on
by default), so the walk of an answer's items onto its request's walk waits until a continuation
asks for it (`LaterWalk`): the request keeps its walk (its lists, not its body) and the answer's bytes, and
the first continuation walks the items, once, for every continuation after it.
"""

from __future__ import annotations

import threading
from typing import Any

from .._base import ErrorResponse
from .._json import loads
from ._parse import Parser
from ._turns import Walked

__all__ = ["LaterWalk", "walk_answer"]

_WALKING = threading.Lock()
"""Held while a `LaterWalk` walks: two continuations of one response at once walk it once."""


def walk_answer(parser: Parser, output: list[Any]) -> Walked | None:
    """The chain after `parser`'s request (walked with `run`) and its answer's `output` items, for the
    next continuation; None if the items do not walk as input (the next continuation then walks the
    whole chain)."""
    start = _answer_start(parser)
    if start is None:
        return None
    try:
        return _walk_on(parser, output, start)
    except ErrorResponse:
        return None


def _answer_start(parser: Parser) -> int | None:
    """Where the answer's items start in the chain after `parser`'s request: after its own `input`
    list; None for a string `input`, which is `input[0]` in a continuation's history and is walked
    again then, so no walk goes on from it."""
    sent = parser.data["input"]
    return parser.chain.items + len(sent) if isinstance(sent, list) else None


class LaterWalk:
    """`walk_answer(parser, output)`, walked when a continuation first asks for it (`walk`), from the
    request's walk, which its request no longer needs (its lists, not the request's body: the
    parser's `data` is let go of) and
    the answer's items as stored (`reply`, their compact JSON without brackets): it holds none of the
    answer's objects, and nothing a caller of the request could still change. `messages` and `ids`
    are what the walked chain will hold (for the store's count of its memory), known before the walk:
    the answer's items are all the model's, so they join or open one assistant turn."""

    def __init__(self, parser: Parser, output: list[Any], reply: bytes, start: int) -> None:
        # The parser's own lists and turns go on with it: its request is answered, and nothing else
        # holds them (the conversation's messages are the turns' copies). Its messages and paths are
        # the conversation's lists too, which a caller may change, and its data the request's body:
        # the parser keeps tuples of the first two and lets go of the third.
        messages, paths = tuple(parser.messages), tuple(parser.paths)
        parser.data, parser.messages, parser.paths = {}, messages, paths  # type: ignore[assignment]
        self.messages = len(parser.turns) - parser.first + (1 if output and not parser.open_assistant else 0)
        ids = len(parser.chain.item_ids) + len(parser.item_ids)
        for item in output:
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                ids += 1
        self.ids = ids
        self._parser: Parser | None = parser
        self._reply = reply
        self._start = start
        self._walked: Walked | None = None

    @classmethod
    def after(cls, parser: Parser, output: list[Any], reply: bytes) -> LaterWalk | None:
        """The walk to come after `parser`'s request and its answer; None where `walk_answer` would
        give none for certain (a string `input`)."""
        start = _answer_start(parser)
        return None if start is None else cls(parser, output, reply, start)

    def walk(self) -> Walked | None:
        """The chain after the request and its answer (`walk_answer`'s), walked once; None if the items
        do not walk as input."""
        with _WALKING:
            parser = self._parser
            if parser is not None:
                self._parser = None
                try:
                    items = loads(b"[" + self._reply + b"]")
                    self._walked = _walk_on(parser, items, self._start) if isinstance(items, list) else None
                except (ValueError, RecursionError, ErrorResponse):  # not items a walk can read: walked whole
                    self._walked = None
                self._reply = b""
            return self._walked


def _walk_on(parser: Parser, output: list[Any], start: int) -> Walked | None:
    turns, calls, ids, outputs = len(parser.turns), len(parser.calls), len(parser.item_ids), len(parser.outputs)
    was_open = parser.open_assistant
    for index, item in enumerate(output, start):
        parser.check_item(index, item)
    sent_ids = {ref.key for ref in parser.item_ids[:ids]}
    added = [ref.key for ref in parser.item_ids[ids:]]
    clash = not sent_ids.isdisjoint(added) or not parser.chain.item_ids.isdisjoint(added)
    if len(parser.outputs) > outputs or len(set(added)) < len(added) or clash:
        return None  # never in the fake's own answers: the whole chain is walked again
    rebuild = turns - 1 if was_open else turns
    return Walked(
        turns=tuple(parser.turns[parser.first :]),
        messages=(
            *parser.messages[parser.first : rebuild],
            *(turn.message() for turn in parser.turns[rebuild:]),
        ),
        paths=(*parser.paths[parser.first : rebuild], *(turn.path for turn in parser.turns[rebuild:])),
        items=start + len(output),
        open_assistant=parser.open_assistant,
        waiting=tuple(parser.calls[calls:]),
        item_ids=parser.chain.item_ids.union(sent_ids, added),
        checked=rebuild - parser.first,
    )
