"""Rebuild a turn from its stream events: there is no `Response.message` on a stream.

Parts come back in the order the stream first announced them: reasoning before the calls it led to,
as every provider that sends reasoning wants the turn back. The text of a turn is joined into one
part, where its first fragment arrived.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import ProviderError
from ..messages._events import (
    MessageEnd,
    ReasoningEnd,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from ..messages._types import Message, Part, Reasoning, Response, Text, ToolCall

__all__ = ["StreamCollector", "acollect_stream", "collect_stream"]


@dataclass
class _PendingCall:
    id: str
    name: str
    meta: Mapping[str, Any]
    fragments: list[str] = field(default_factory=list)


class StreamCollector:
    """Feed it events in order; `response()` gives the assembled turn once `MessageEnd` arrived."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, _PendingCall] = {}
        self._reasoning: dict[int, Reasoning] = {}
        self._order: list[tuple[str, int]] = []
        """("text" | "call" | "reasoning", index) in the order each part first appeared."""
        self._end: MessageEnd | None = None
        self.events: list[StreamEvent] = []

    def feed(self, event: StreamEvent) -> None:
        self.events.append(event)
        if isinstance(event, TextDelta):
            if not self._text:
                self._order.append(("text", 0))
            self._text.append(event.text)
        elif isinstance(event, ReasoningEnd):
            if event.index not in self._reasoning:
                self._order.append(("reasoning", event.index))
            self._reasoning[event.index] = event.reasoning
        elif isinstance(event, ToolCallStart):
            if event.index not in self._calls:
                self._order.append(("call", event.index))
            self._calls[event.index] = _PendingCall(event.id, event.name, event.meta)
        elif isinstance(event, ToolCallDelta):
            self._pending(event.index).fragments.append(event.arguments)
        elif isinstance(event, ToolCallEnd):
            self._pending(event.index)
        elif isinstance(event, MessageEnd):
            self._end = event

    def response(self) -> Response:
        if self._end is None:
            raise ProviderError(
                "The stream ended without a message end event, so the turn is incomplete.",
                status=200,
                provider="stream",
            )
        parts: list[Part] = []
        text = "".join(self._text)
        for kind, index in self._order:
            if kind == "text":
                if text:
                    parts.append(Text(text))
            elif kind == "reasoning":
                parts.append(self._reasoning[index])
            else:
                parts.append(self._finish_call(self._calls[index]))
        return Response(
            message=Message("assistant", parts),
            stop_reason=self._end.stop_reason,
            usage=self._end.usage,
            model=self._end.model,
            id=self._end.id,
            raw=list(self.events),
        )

    def _pending(self, index: int) -> _PendingCall:
        try:
            return self._calls[index]
        except KeyError:
            raise ProviderError(
                f"The stream sent arguments for tool call {index} before announcing that call.",
                status=200,
                provider="stream",
            ) from None

    @staticmethod
    def _finish_call(call: _PendingCall) -> ToolCall:
        text = "".join(call.fragments)
        try:
            arguments: Any = json.loads(text) if text.strip() else {}
        except ValueError:
            raise ProviderError(
                f"The arguments streamed for tool call {call.name!r} (id={call.id!r}) are not valid JSON: "
                f"{text[:200]!r}",
                status=200,
                provider="stream",
            ) from None
        if not isinstance(arguments, dict):
            raise ProviderError(
                f"The arguments streamed for tool call {call.name!r} are not a JSON object: {text[:200]!r}",
                status=200,
                provider="stream",
            )
        return ToolCall(call.id, call.name, arguments, meta=call.meta)


def collect_stream(stream: Iterable[StreamEvent]) -> Response:
    """Consume a stream and return the turn it carried, exactly as `complete()` would have."""
    collector = StreamCollector()
    for event in stream:
        collector.feed(event)
    return collector.response()


async def acollect_stream(stream: AsyncIterable[StreamEvent]) -> Response:
    """`collect_stream` for an `AsyncStream`."""
    collector = StreamCollector()
    async for event in stream:
        collector.feed(event)
    return collector.response()
