"""The fake side's Responses stream: `response.created` and `response.in_progress` with the response in
progress, each output item's events, then the terminal event holding the full response.
Touches only a rendered `ModelTurn` and the request's `Conversation`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._base import Conversation, ModelTurn, split_fragments, stable_token
from .._sse import dumps, sse_frame
from ._encode import encode_response, refusal_part, text_part
from ._reasoning import stream_item

__all__ = ["encode_stream", "stream_answer"]

_TERMINAL_EVENTS = {"incomplete": "response.incomplete", "failed": "response.failed"}


def encode_stream(turn: ModelTurn, conversation: Conversation) -> list[bytes]:
    """created, in_progress, each item's events, then the terminal event holding the full response."""
    return stream_answer(turn, conversation)[0]


def stream_answer(turn: ModelTurn, conversation: Conversation) -> tuple[list[bytes], dict[str, Any]]:
    """`encode_stream`'s frames, and the response object they hold (what kept state stores)."""
    response = encode_response(turn, conversation)
    pending = {**response, "status": "in_progress", "incomplete_details": None, "output": [], "usage": None}
    # Seeded by the step, not the response id: the padding is no id, and an answer's bytes may differ
    # from another's only in the ids that name it (the README's determinism promise).
    writer = _StreamWriter(turn.seed, obfuscate=_obfuscates(conversation.raw))
    writer.emit("response.created", response=pending)
    writer.emit("response.in_progress", response=pending)
    for index, item in enumerate(response["output"]):
        if item["type"] == "function_call":
            _stream_call(writer, index, item)
        elif item["type"] == "reasoning":
            stream_item(writer.emit, index, item)
        else:
            _stream_message(writer, index, item)
    writer.emit(_TERMINAL_EVENTS.get(response["status"], "response.completed"), response=response)
    return writer.frames, response


class _StreamWriter:
    """Numbers events from 0 and frames them as `event:` + `data:` pairs.

    Every `delta` travels with an `obfuscation` of random characters that pads it to 16 (both
    recordings: vercel/ai `issue-19493-gpt-5.1-tool-call.chunks.txt` and
    `openai-reasoning-encrypted-content.1.chunks.txt`, where each delta and its obfuscation add up to
    16 characters), unless the request turned it off with `stream_options.include_obfuscation: false`.
    An event's `obfuscation` follows its `delta`.
    """

    def __init__(self, seed: str, *, obfuscate: bool) -> None:
        self.frames: list[bytes] = []
        self._seed = seed
        self._obfuscate = obfuscate

    def emit(self, kind: str, **fields: Any) -> None:
        number = len(self.frames)
        event: dict[str, Any] = {"type": kind, "sequence_number": number}
        for key, value in fields.items():
            event[key] = value
            if key == "delta" and self._obfuscate:
                event["obfuscation"] = stable_token(f"{self._seed}:{number}", 16 - len(value) % 16)
        self.frames.append(sse_frame(dumps(event), event=kind))


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
    for fragment in split_fragments(item["arguments"]):
        writer.emit("response.function_call_arguments.delta", **ids, delta=fragment)
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
        if part["type"] == "refusal":
            writer.emit("response.content_part.added", **ids, part=refusal_part(""))
            for fragment in split_fragments(part["refusal"]):
                writer.emit("response.refusal.delta", **ids, delta=fragment)
            writer.emit("response.refusal.done", **ids, refusal=part["refusal"])
        else:
            writer.emit("response.content_part.added", **ids, part=text_part(""))
            for fragment in split_fragments(part["text"]):
                writer.emit("response.output_text.delta", **ids, delta=fragment, logprobs=[])
            writer.emit("response.output_text.done", **ids, text=part["text"], logprobs=[])
        writer.emit("response.content_part.done", **ids, part=part)
    writer.emit("response.output_item.done", output_index=index, item=item)
