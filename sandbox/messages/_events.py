"""Typed stream events: what `Client.stream()` yields, the same for every provider.

There is no `Response.message` on a stream: a loop rebuilds the turn from these events, or hands
the stream to `collect_stream`. Tool-call events carry the call's `index` within the turn, so
fragments of different calls are never confused. A reasoning model's turn also streams its
reasoning: `ReasoningDelta`s to read as it arrives, then `ReasoningEnd` with the part to keep.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ._types import Reasoning, StopReason, Usage

__all__ = [
    "MessageEnd",
    "ReasoningDelta",
    "ReasoningEnd",
    "StreamEvent",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
]


@dataclass(frozen=True)
class TextDelta:
    """A fragment of the turn's prose."""

    text: str
    kind: Literal["text_delta"] = field(default="text_delta", repr=False)


@dataclass(frozen=True)
class ReasoningDelta:
    """A fragment of the readable text of reasoning part `index` (thinking, a summary): for display only."""

    index: int
    text: str
    kind: Literal["reasoning_delta"] = field(default="reasoning_delta", repr=False)


@dataclass(frozen=True)
class ReasoningEnd:
    """Reasoning part `index` is complete. `reasoning` is the part to keep in the rebuilt turn, in
    its place before the calls: the provider wants it back, signature and all."""

    index: int
    reasoning: Reasoning
    kind: Literal["reasoning_end"] = field(default="reasoning_end", repr=False)


@dataclass(frozen=True)
class ToolCallStart:
    """A new call begins: its id and name are known, its arguments will follow in fragments."""

    index: int
    id: str
    name: str
    kind: Literal["tool_call_start"] = field(default="tool_call_start", repr=False)
    meta: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """Provider details the replay needs, as on `ToolCall.meta`; keep them on the rebuilt call."""


@dataclass(frozen=True)
class ToolCallDelta:
    """A fragment of the JSON text of call `index`'s arguments. Join them, then parse."""

    index: int
    arguments: str
    kind: Literal["tool_call_delta"] = field(default="tool_call_delta", repr=False)


@dataclass(frozen=True)
class ToolCallEnd:
    """Call `index` has all its argument fragments."""

    index: int
    kind: Literal["tool_call_end"] = field(default="tool_call_end", repr=False)


@dataclass(frozen=True)
class MessageEnd:
    """The turn is over."""

    stop_reason: StopReason
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    id: str = ""
    kind: Literal["message_end"] = field(default="message_end", repr=False)


StreamEvent = TextDelta | ReasoningDelta | ReasoningEnd | ToolCallStart | ToolCallDelta | ToolCallEnd | MessageEnd
