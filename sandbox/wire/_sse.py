"""Server-sent events: encode frames and parse them incrementally.

Providers frame SSE differently (OpenAI chat: `data:` only; Responses and Anthropic: `event:` +
`data:`; Gemini: `data:` with CRLF separators). The parser accepts every line ending the spec allows,
because the official SDKs do.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["SSEEvent", "SSEParser", "compact_bytes", "dumps", "iter_sse", "quote", "sse_frame", "to_bytes"]

_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def _unencodable(value: Any) -> Any:
    return _COMPACT.default(value)  # raises the TypeError json.dumps raises


_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)
_ENCODE: Callable[[Any, int], list[str]] | None = (
    _make_encoder(None, _unencodable, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    if _make_encoder is not None
    else None
)
"""json's C encoder, made once, writing what `json.dumps(data, separators=(",", ":"), ensure_ascii=False)`
writes. No circular check (`markers` None): what is encoded here are the trees the fake builds for
its answers, never circular."""


def dumps(data: Any) -> str:
    """Compact JSON, the way the providers write it on the wire (exactly `json.dumps`'s text)."""
    if _ENCODE is None:  # pragma: no cover - an interpreter without json's C accelerator
        return _COMPACT.encode(data)
    return "".join(_ENCODE(data, 0))


quote: Callable[[str], str] = json.encoder.encode_basestring
"""A string as JSON text, exactly as `dumps` writes it."""


def compact_bytes(data: Any) -> bytes:
    """`dumps(data)` as UTF-8, a lone surrogate kept as its own bytes (`surrogatepass`): how kept state
    stores a request's items and an answer's, to be read back as the same values."""
    return dumps(data).encode("utf-8", "surrogatepass")


def to_bytes(json_text: str) -> bytes:
    """UTF-8 bytes of JSON text. A request may smuggle in a lone surrogate (`"\\ud800"` is valid
    JSON); echoed back, it stays the same JSON escape instead of breaking the encoder."""
    return json_text.encode("utf-8", "backslashreplace")


def sse_frame(data: str, *, event: str | None = None, newline: str = "\n") -> bytes:
    head = f"event: {event}{newline}" if event is not None else ""
    return to_bytes(f"{head}data: {data}{newline}{newline}")


@dataclass(frozen=True)
class SSEEvent:
    event: str | None
    data: str


class SSEParser:
    """Feed bytes as they arrive; get back every event completed so far."""

    def __init__(self) -> None:
        self._buffer = ""
        self._event: str | None = None
        self._data: list[str] = []

    def feed(self, chunk: bytes | str) -> list[SSEEvent]:
        text = chunk.decode("utf-8", errors="replace") if isinstance(chunk, bytes) else chunk
        self._buffer += text
        events: list[SSEEvent] = []
        while True:
            line, found = self._take_line()
            if not found:
                return events
            event = self._process(line)
            if event is not None:
                events.append(event)

    def close(self) -> tuple[list[SSEEvent], str]:
        """End of input: the last event if it was complete but unterminated, and any leftover text."""
        leftover = self._buffer
        self._buffer = ""
        events: list[SSEEvent] = []
        if leftover:
            event = self._process(leftover)
            leftover = ""
            if event is not None:
                events.append(event)
        if self._data:
            events.append(SSEEvent(self._event, "\n".join(self._data)))
            self._data, self._event = [], None
        return events, leftover

    def _take_line(self) -> tuple[str, bool]:
        for index, char in enumerate(self._buffer):
            if char == "\n":
                line, self._buffer = self._buffer[:index], self._buffer[index + 1 :]
                return line, True
            if char == "\r":
                if index + 1 == len(self._buffer):
                    return "", False  # a CRLF may be split across chunks: wait for more
                skip = 2 if self._buffer[index + 1] == "\n" else 1
                line, self._buffer = self._buffer[:index], self._buffer[index + skip :]
                return line, True
        return "", False

    def _process(self, line: str) -> SSEEvent | None:
        if line == "":
            if not self._data and self._event is None:
                return None
            event = SSEEvent(self._event, "\n".join(self._data))
            self._data, self._event = [], None
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None


def iter_sse(chunks: Iterable[bytes | str]) -> Iterator[SSEEvent]:
    """Every event in a complete byte stream (for tests and recordings)."""
    parser = SSEParser()
    for chunk in chunks:
        yield from parser.feed(chunk)
    yield from parser.close()[0]
