"""A bounded memo of a stream's frames: what every streamed answer of one step repeats, written once.

A streamed answer sends its text in many small fragments, a frame each, and every answer of the same
step sends the same frames but for a few parts: the answer's own id (in every Chat chunk, in
Anthropic's `message_start`), the usage figures (they count the request's bytes), Gemini's usage in
every chunk. A wire format writes a step's frames once with those parts left out, keys them by
everything they were written from (`content_key`: the turn's parts; the format adds the model, the
finish reason, the request's stream options), and puts each answer's own parts in per answer. The
memo is a pure function of its key, so a hit is the text a miss would write; it holds no id, so one
answer's id never reaches another's frames.

Bounded in entries and in bytes (`_memo.Memo`), and a turn whose parts are long (a 4 MiB quoted tool result) is
never memoised: such a stream is written per answer, as before. Touches nothing but itself.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from ..messages._types import Part, Reasoning, Text, ToolCall
from ._memo import Memo
from ._sse import dumps

__all__ = ["CONTENT_LIMIT", "arguments_text", "content_key", "frame_memo", "keep_frames", "memoised_frames"]

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
    if len(content) == 1 and type(content[0]) is Text:  # a final answer's one text: most answers
        text = content[0].text
        return ((("text", text),), len(text)) if len(text) <= CONTENT_LIMIT else None
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


def frame_memo() -> Memo[tuple[bytes, ...]]:
    """A wire format's memo of frames (or the parts of frames it joins per answer): 1,024 entries and
    4 MiB at most, no entry over 64 KiB (its frames' bytes and its key's characters)."""
    return Memo(entries=1024, max_bytes=4 << 20, largest=64 << 10)


def keep_frames(memo: Memo[tuple[bytes, ...]], key: Hashable, frames: tuple[bytes, ...], key_size: int) -> None:
    """Keep `frames` under `key` (whose text is `key_size` characters), counted with their bytes."""
    memo.put(key, frames, key_size + sum(map(len, frames)))


def memoised_frames(
    memo: Memo[tuple[bytes, ...]],
    tag: tuple[Any, ...],
    content: tuple[tuple[Any, ...], int] | None,
    write: Callable[[], tuple[bytes, ...]],
    key_size: int = 0,
) -> tuple[bytes, ...]:
    """`write()`, from `memo` when a turn of the same `content` (`content_key`'s) and the same `tag`
    (what else the frames were written from, `key_size` characters of it) was written already; a turn
    with no content key is written every time."""
    if content is None:
        return write()
    key = (*tag, content[0])
    frames = memo.get(key)
    if frames is None:
        frames = write()
        keep_frames(memo, key, frames, content[1] + key_size)
    return frames
