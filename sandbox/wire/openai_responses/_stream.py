"""The fake side's Responses stream: `response.created` and `response.in_progress` with the response in
progress, each output item's events, then the terminal event holding the full response.
Touches only a rendered `ModelTurn`, the request's `Conversation` and the answer's texts (`_encode`).

What a step's streams share is written once. The events between `response.in_progress` and the
terminal one (each item's added/delta/done events, numbered from 2, each delta with its obfuscation)
are a pure function of the step's seed, whether the request turned obfuscation off, and the output
items' JSON text: the item ids come from the step, not from the answer, and the obfuscation is
seeded by the step too. So they are kept (`_ITEM_FRAMES`, bounded) under that key, and every other
stream of the same step (a room's learners, a test suite's reruns) sends the same bytes without
writing them again. The response objects at both ends carry the answer's own id and the request's
echoed fields, and are written for each answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._base import Conversation, ModelTurn, split_fragments, stable_token
from .._memo import Memo
from .._sse import dumps, quote, sse_frame, to_bytes
from ._encode import Answer, refusal_part, text_part
from ._reasoning import stream_item

__all__ = ["encode_stream", "stream_answer"]

_TERMINAL_EVENTS = {"incomplete": "response.incomplete", "failed": "response.failed"}
_FIRST_ITEM_EVENT = 2
"""The sequence number of the first item event: `response.created` is 0, `response.in_progress` 1."""
_FRAME_OVERHEAD = 40
"""Bytes a frame costs beyond its length (the `bytes` object), and an entry beyond its frames (x4)."""
_ITEM_FRAMES: Memo[tuple[bytes, ...]] = Memo(entries=512, max_bytes=8 * 1024 * 1024, largest=256 * 1024)
"""(seed, obfuscate, items' JSON) -> the item events' frames. At most 8 MiB, 512 steps, none above
256 KiB (key and frames): a long answer is written for each stream, as before."""


def encode_stream(turn: ModelTurn, conversation: Conversation) -> list[bytes]:
    """created, in_progress, each item's events, then the terminal event holding the full response."""
    return stream_answer(turn, conversation)[0]


def stream_answer(turn: ModelTurn, conversation: Conversation) -> tuple[list[bytes], dict[str, Any]]:
    """`encode_stream`'s frames, and what kept state stores of the response they hold (`Answer.kept`)."""
    answer = Answer(turn, conversation)
    pending = answer.pending()
    # Seeded by the step, not the response id: the padding is no id, and an answer's bytes may differ
    # from another's only in the ids that name it (the README's determinism promise).
    items = _item_frames(turn.seed, _obfuscates(conversation.raw), answer)
    terminal = _TERMINAL_EVENTS.get(answer.status, "response.completed")
    return [
        _frame("response.created", 0, pending),
        _frame("response.in_progress", 1, pending),
        *items,
        _frame(terminal, _FIRST_ITEM_EVENT + len(items), answer.text()),
    ], answer.kept()


def _frame(kind: str, number: int, response: str) -> bytes:
    """`_StreamWriter.emit(kind, response=...)` for a response object already written as JSON text: the
    frame `sse_frame` writes, in one text (the response object, about 1 KB, copied once, not twice)."""
    return to_bytes(f'event: {kind}\ndata: {{"type":"{kind}","sequence_number":{number},"response":{response}}}\n\n')


def _item_frames(seed: str, obfuscate: bool, answer: Answer) -> tuple[bytes, ...]:
    """The frames of the answer's items, from the memo when this step's were written already."""
    if len(answer.items) > _ITEM_FRAMES.largest:  # never kept: not worth hashing as a key
        return _write_items(seed, obfuscate, answer.output)
    key = (seed, obfuscate, answer.items)
    frames = _ITEM_FRAMES.get(key)
    if frames is None:
        frames = _write_items(seed, obfuscate, answer.output)
        size = len(answer.items) + sum(map(len, frames)) + _FRAME_OVERHEAD * (len(frames) + 4)
        _ITEM_FRAMES.put(key, frames, size)
    return frames


def _write_items(seed: str, obfuscate: bool, output: list[dict[str, Any]]) -> tuple[bytes, ...]:
    writer = _StreamWriter(seed, obfuscate=obfuscate, first=_FIRST_ITEM_EVENT)
    for index, item in enumerate(output):
        if item["type"] == "function_call":
            _stream_call(writer, index, item)
        elif item["type"] == "reasoning":
            stream_item(writer.emit, index, item)
        else:
            _stream_message(writer, index, item)
    return tuple(writer.frames)


class _StreamWriter:
    """Numbers events from 0 and frames them as `event:` + `data:` pairs.

    Every `delta` travels with an `obfuscation` of random characters that pads it to 16 (both
    recordings: vercel/ai `issue-19493-gpt-5.1-tool-call.chunks.txt` and
    `openai-reasoning-encrypted-content.1.chunks.txt`, where each delta and its obfuscation add up to
    16 characters), unless the request turned it off with `stream_options.include_obfuscation: false`.
    An event's JSON is the text `dumps` writes for `{"type", "sequence_number", **fields}` (an
    obfuscation right after its delta), put together from its fields' texts: a delta's other fields
    are written once per item (`delta`). Numbers start at `first`.
    """

    def __init__(self, seed: str, *, obfuscate: bool, first: int = 0) -> None:
        self.frames: list[bytes] = []
        self._seed = seed
        self._obfuscate = obfuscate
        self._first = first

    def emit(self, kind: str, **fields: Any) -> None:
        number = self._first + len(self.frames)
        text = [f'{{"type":"{kind}","sequence_number":{number}']
        for key, value in fields.items():
            text.append(f',"{key}":{dumps(value)}')
            if key == "delta" and isinstance(value, str):
                text.append(self._obfuscation(number, value))
        text.append("}")
        self.frames.append(sse_frame("".join(text), event=kind))

    def delta(self, kind: str, ids: str, fragment: str, after: str = "") -> None:
        """`emit(kind, **ids, delta=fragment, **after)` with the JSON text of `ids` (`,"item_id":...`) and
        `after` (`,"logprobs":[]`) written by the caller once for all of an item's deltas."""
        number = self._first + len(self.frames)
        obfuscation = self._obfuscation(number, fragment)
        data = f'{{"type":"{kind}","sequence_number":{number}{ids},"delta":{quote(fragment)}{obfuscation}{after}}}'
        self.frames.append(sse_frame(data, event=kind))

    def _obfuscation(self, number: int, delta: str) -> str:
        if not self._obfuscate:
            return ""
        # The token's alphabet is letters and digits: its JSON string needs no escapes.
        return f',"obfuscation":"{stable_token(f"{self._seed}:{number}", 16 - len(delta) % 16)}"'


def _obfuscates(raw: Mapping[str, Any]) -> bool:
    options = raw.get("stream_options")
    return not (isinstance(options, Mapping) and options.get("include_obfuscation") is False)


def _stream_call(writer: _StreamWriter, index: int, item: dict[str, Any]) -> None:
    ids = {"item_id": item["id"], "output_index": index}
    writer.emit(
        "response.output_item.added",
        output_index=index,
        item={**item, "status": "in_progress", "arguments": ""},
    )
    written = f',"item_id":{dumps(item["id"])},"output_index":{index}'
    for fragment in split_fragments(item["arguments"]):
        writer.delta("response.function_call_arguments.delta", written, fragment)
    # No `name` here: the real event carries the item id and the arguments only (openai 3.57
    # ResponseFunctionCallArgumentsDoneEvent; the recorded streams of reference 3.3); the name
    # arrives with `response.output_item.added`.
    writer.emit("response.function_call_arguments.done", **ids, arguments=item["arguments"])
    writer.emit("response.output_item.done", output_index=index, item=item)


def _stream_message(writer: _StreamWriter, index: int, item: dict[str, Any]) -> None:
    writer.emit(
        "response.output_item.added",
        output_index=index,
        item={**item, "status": "in_progress", "content": []},
    )
    for content_index, part in enumerate(item["content"]):
        ids = {"item_id": item["id"], "output_index": index, "content_index": content_index}
        written = f',"item_id":{dumps(item["id"])},"output_index":{index},"content_index":{content_index}'
        if part["type"] == "refusal":
            writer.emit("response.content_part.added", **ids, part=refusal_part(""))
            for fragment in split_fragments(part["refusal"]):
                writer.delta("response.refusal.delta", written, fragment)
            writer.emit("response.refusal.done", **ids, refusal=part["refusal"])
        else:
            writer.emit("response.content_part.added", **ids, part=text_part(""))
            for fragment in split_fragments(part["text"]):
                writer.delta("response.output_text.delta", written, fragment, ',"logprobs":[]')
            writer.emit("response.output_text.done", **ids, text=part["text"], logprobs=[])
        writer.emit("response.content_part.done", **ids, part=part)
    writer.emit("response.output_item.done", output_index=index, item=item)
