"""A bounded memo of a stream's frames: what every streamed answer of one step repeats, written once.

A streamed answer sends its text in many small fragments, a frame each, and every answer of the same
step sends the same frames but for a few parts: the answer's own id (in every Chat chunk, in
Anthropic's `message_start`), the usage figures (they count the request's bytes), Gemini's usage in
every chunk. A wire format writes a step's frames once with those parts left out, keys them by
everything they were written from (`content_key`: the turn's parts; the format adds the model, the
finish reason, the request's stream options), and puts each answer's own parts in per answer. The
memo is a pure function of its key, so a hit is the text a miss would write; it holds no id, so one
answer's id never reaches another's frames.

Bounded in entries and in bytes, and a turn whose parts are long (a 4 MiB quoted tool result) is
never memoised: such a stream is written per answer, as before. Touches nothing but itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from .._types import Part, Reasoning, Text, ToolCall
from ._sse import dumps

__all__ = ["CONTENT_LIMIT", "FrameMemo", "arguments_text", "content_key"]

CONTENT_LIMIT = 8192
"""A turn whose parts hold more characters than this is not memoised: its frames are mostly its own
text, which the memo would only copy, and a long quoted result is one request's, not a step's."""


def arguments_text(arguments: Mapping[str, Any]) -> str:
    """A call's arguments as Chat and Anthropic write them (`dumps(dict(arguments))`)."""
    return dumps(dict(arguments))


def content_key(
    content: Sequence[Part], arguments: Callable[[Mapping[str, Any]], str] = arguments_text
) -> tuple[tuple[Any, ...], int] | None:
    """The turn's parts as a key (each with everything a stream writes of it: a text's text, a call's
    id, name and `arguments` as the format writes them, a reasoning part's provider, payload, summary
    and redaction), and its size in characters; None for a turn no memo should hold (longer than
    `CONTENT_LIMIT`, or with a part a model turn cannot have or arguments that are not JSON, whose
    error the format raises on every request)."""
    key: list[tuple[Any, ...]] = []
    size = 0
    try:
        for part in content:
            if isinstance(part, Text):
                key.append(("text", part.text))
                size += len(part.text)
            elif isinstance(part, ToolCall):
                text = arguments(part.arguments)
                key.append(("call", part.id, part.name, text))
                size += len(part.id) + len(part.name) + len(text)
            elif isinstance(part, Reasoning):
                key.append(("reasoning", part.provider, part.payload, part.summary, part.redacted))
                size += len(part.payload) + len(part.summary)
            else:
                return None
            if size > CONTENT_LIMIT:
                return None
    except (TypeError, ValueError, RecursionError):
        return None
    return tuple(key), size


class FrameMemo:
    """Frames (or the parts of frames a format joins per answer) by key: at most `entries` of them and
    `max_bytes` in all (the frames' bytes and the key's characters), the oldest dropped first; an entry
    over `entry_bytes` is not kept. Thread-safe: a door may answer from several threads."""

    def __init__(self, *, entries: int = 1024, max_bytes: int = 4 << 20, entry_bytes: int = 64 << 10) -> None:
        self.entries = entries
        self.max_bytes = max_bytes
        self.entry_bytes = entry_bytes
        self._frames: dict[Hashable, tuple[tuple[bytes, ...], int]] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self.cache_info = self._info
        """How many entries the memo holds and their bytes."""
        self.cache_clear = self._clear
        """Empties the memo (attributes of the memo, not of its class, as a `functools` memo has them:
        what empties every memo of the sandbox finds them on the instance)."""

    def get(self, key: Hashable) -> tuple[bytes, ...] | None:
        found = self._frames.get(key)
        return None if found is None else found[0]

    def put(self, key: Hashable, frames: tuple[bytes, ...], key_size: int) -> None:
        """Keep `frames` under `key` (whose text is `key_size` characters) if they fit the bounds."""
        size = key_size + sum(map(len, frames))
        if size > self.entry_bytes:
            return
        with self._lock:
            if key in self._frames:
                return
            while self._frames and (len(self._frames) >= self.entries or self._bytes + size > self.max_bytes):
                self._bytes -= self._frames.pop(next(iter(self._frames)))[1]
            self._frames[key] = (frames, size)
            self._bytes += size

    def _info(self) -> tuple[int, int]:
        return len(self._frames), self._bytes

    def _clear(self) -> None:
        with self._lock:
            self._frames.clear()
            self._bytes = 0
