"""A request as the engine sees it once kept state is expanded into it (`Expanded`), and the JSON
helpers the expansions share. May touch: nothing but the bytes and objects it is handed.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ...wire import Conversation, WireFormat
from ...wire._json import decode
from ...wire._sse import compact_bytes
from ._chain import Resume
from ._store import Claim

__all__ = ["Expanded", "input_items", "joined_bytes", "json_object", "reads_alike", "splice"]


@dataclass
class Expanded:
    """A request as the engine sees it, and what to keep once it is answered. Nothing changes one once it
    is made; not frozen, as every request makes one and a frozen dataclass's `__init__` is slower."""

    body: bytes
    """The request as the wire format reads it; empty for a continuation, whose whole request is
    `whole` (spliced only if it is walked whole)."""
    keep: bool = False
    """Store the answered turn under the response's id (a thread turn, or `store` not false)."""
    claim: Claim | None = None
    """The stored turn this request continues, held until it is answered or fails."""
    new_items: bytes | None = None
    """The JSON of the messages or items the client sent with a continuation (None: the whole request's)."""
    missing: str | None = None
    """Why the store does not hold the `previous_response_id` (`Store.claim`'s reason): the wire format
    reports it, `explain` adds why."""
    missing_conversation: str | None = None
    """A `conversation` the store does not hold for this sender: the wire format reports it."""
    conversation: str | None = None
    """The conversation this request reads, to which its input and output are appended."""
    conversation_input: list[Any] = field(default_factory=list)
    """The request's own `input` items, for the conversation."""
    conversation_read: tuple[bytes, tuple[bytes, ...]] | None = None
    """The conversation's `items` and `appended` fragments as this request read them (`Store.view`):
    its history starts with them, and its snapshot is kept only if they are still the conversation's
    when its turn is appended."""
    conversation_bytes: int = 0
    """Their size in bytes."""
    echo: Mapping[str, Any] = field(default_factory=dict)
    """Request fields the expansion removed that the answer echoes (`previous_response_id`)."""
    resume: Resume | None = None
    """The request's head start from its chain's snapshot, and what it leaves (`_chain`)."""
    short: dict[str, Any] | None = None
    """The continuation's own fields and `input` (a thread's: `messages`), walked after the snapshot; or
    a Responses request's own fields as `expand` read them, walked from the start."""
    splice: tuple[Mapping[str, Any], str, tuple[bytes, ...]] | None = None
    """The whole request as fields and the chain's fragments, spliced only when it is walked whole."""

    @property
    def whole(self) -> bytes:
        """The request the continuation stands for, history included."""
        return splice(*self.splice) if self.splice is not None else self.body

    def restore(self, conversation: Conversation) -> Conversation:
        """The conversation as the client sent it, for the answer's echo of the request."""
        return replace(conversation, raw={**conversation.raw, **self.echo}) if self.echo else conversation

    def walk_whole(self, wire: WireFormat, *, path_model: str | None, path_stream: bool) -> Callable[[], Conversation]:
        """What walks the whole request when called (`Resume.full`): it holds the request's parts, not
        this object, which holds the `Resume` that holds it (a cycle would keep each request's walk
        alive until the garbage collector's next pass, and make every pass walk them)."""
        return functools.partial(_walked_whole, wire, self.splice, self.body, self.echo, path_model, path_stream)


def _walked_whole(
    wire: WireFormat,
    parts: tuple[Mapping[str, Any], str, tuple[bytes, ...]] | None,
    body: bytes,
    echo: Mapping[str, Any],
    path_model: str | None,
    path_stream: bool,
) -> Conversation:
    conversation = wire.parse_request(
        splice(*parts) if parts is not None else body, path_model=path_model, path_stream=path_stream
    )
    return replace(conversation, raw={**conversation.raw, **echo}) if echo else conversation


def splice(fields: Mapping[str, Any], key: str, parts: tuple[bytes, ...]) -> bytes:
    """`fields` as a JSON object with `key` set to the array of the JSON fragments `parts`, built from
    the stored bytes without parsing them."""
    head = compact_bytes(fields)
    array = b'"' + key.encode() + b'":[' + b",".join(part for part in parts if part) + b"]"
    return (b"{" + array + b"}") if head == b"{}" else head[:-1] + b"," + array + b"}"


def json_object(body: bytes) -> dict[str, Any] | None:
    """`body` as a JSON object, or None (not JSON, NaN or Infinity, or not an object): the wire format
    then reads it, and says what is wrong."""
    try:
        data = decode(body, _DECODER)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _not_json(name: str) -> Any:
    raise ValueError(name)  # NaN and Infinity are not JSON: the wire format says so


_DECODER = json.JSONDecoder(parse_constant=_not_json)


def reads_alike(*parts: bytes) -> bool:
    """Whether the whole request's JSON, spliced from these re-encoded parts, reads as the parts parsed
    (no lone surrogate, which its UTF-8 refuses; no NaN or Infinity from an out-of-range number), so
    that a short walk of the parsed parts judges what the whole walk would."""
    for part in parts:
        if b"NaN" in part or b"Infinity" in part:
            return False
        try:
            part.decode("utf-8")
        except UnicodeDecodeError:
            return False
    return True


def joined_bytes(items: list[Any]) -> bytes:
    """The items' JSON texts joined by commas, as stored: the list's compact text without its brackets
    (the same bytes as each item encoded alone, one encoder call instead of one per item)."""
    return compact_bytes(items)[1:-1]


def input_items(data: Mapping[str, Any]) -> list[Any] | None:
    """A Responses request's `input` as a list of items (a string is one user message, as the API reads
    it), or None for a wrong type, which the wire format refuses in the API's words."""
    given = data.get("input", [])
    if isinstance(given, str):
        return [{"role": "user", "content": given}]
    return given if isinstance(given, list) else None
