"""The fake side's answer in Anthropic Messages: the message, its SSE stream, the error envelope, and
the request id they carry. Touches only a rendered `ModelTurn` and the request's `Conversation`; it
reads no request bytes.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from ..._exceptions import UsageError
from ...messages._types import Message, ToolResult
from .._base import (
    BASE58,
    Conversation,
    ModelTurn,
    Rule,
    WireError,
    split_fragments,
    stable_token,
    unique_token,
)
from .._frames import content_key, frame_memo, memoised_frames
from .._sse import dumps, quote, sse_frame, to_bytes
from ._client import ERROR_TYPES, WIRE_STOP, wire_blocks
from ._reasoning import stream_deltas, stream_start

__all__ = ["encode_answer", "encode_response", "encode_stream", "error", "identified_error_body", "request_id"]


def _response_blocks(message: Message) -> list[dict[str, Any]]:
    for part in message.content:
        if isinstance(part, ToolResult):
            raise UsageError(
                f"A scripted Anthropic turn cannot hold a tool result ({part!r}): a model turn holds "
                "text and tool calls only. Put the result in the conversation instead."
            )
    return wire_blocks(message)


def request_id(request_digest: str) -> str:
    return "req_011C" + unique_token(f"request-id:{request_digest}", 20, BASE58)


def identified_error_body(error: WireError, request_digest: str) -> bytes:
    """The body repeats the header's request id as its top-level `request_id` (reference A.5)."""
    try:
        body = json.loads(error.body)
    except ValueError:
        return error.body
    if not isinstance(body, dict) or "request_id" not in body:
        return error.body
    return to_bytes(dumps({**body, "request_id": request_id(request_digest)}))


# -- client side -------------------------------------------------------------------------------
def _message_id(turn: ModelTurn) -> str:
    return "msg_01" + unique_token(turn.response_seed, 22, BASE58)


def _stop(turn: ModelTurn) -> str:
    return turn.raw_stop_reason or WIRE_STOP[turn.stop_reason]


def _stop_sequence(stop: str, conversation: Conversation) -> str | None:
    """The matched sequence, for a turn that stopped at one (`stop`, its `_stop`): we take the first one
    the request asked for."""
    if stop != "stop_sequence":
        return None
    sequences = conversation.raw.get("stop_sequences")
    return sequences[0] if isinstance(sequences, list) and sequences else None


def _usage(turn: ModelTurn, output_tokens: int) -> dict[str, Any]:
    """Usage as 2026 traffic has it (reference A.3, A.4 "Newer fields"): the body and
    `message_start` break `cache_creation` down and name the `service_tier`; `message_delta`
    carries the counts only (`encode_stream`). The non-streamed body of 2026 keeps `cache_creation` (vercel/ai
    `anthropic/src/__fixtures__/issue-13430-thinking-tool-call.json`, claude-sonnet-4-6; the older
    pydantic-ai `test_anthropic_extended_thinking_with_tool_use.yaml`, claude-sonnet-4, predates it)
    and breaks the thinking out of `output_tokens` in `output_tokens_details.thinking_tokens`.
    `_usage_text` writes the same object as text."""
    usage: dict[str, Any] = {
        "input_tokens": turn.usage.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": output_tokens,
    }
    if turn.reasoning_tokens and output_tokens >= turn.reasoning_tokens:
        usage["output_tokens_details"] = {"thinking_tokens": turn.reasoning_tokens}
    usage["service_tier"] = "standard"
    return usage


def encode_response(turn: ModelTurn, conversation: Conversation) -> dict[str, Any]:
    return {
        "model": conversation.model,
        "id": _message_id(turn),
        "type": "message",
        "role": "assistant",
        "content": _response_blocks(turn.message),
        "stop_reason": _stop(turn),
        "stop_sequence": _stop_sequence(_stop(turn), conversation),
        "usage": _usage(turn, turn.usage.output_tokens),
    }


def encode_answer(turn: ModelTurn, conversation: Conversation) -> tuple[bytes, None]:
    """`encode_response`'s body as it goes out (the text `dumps` writes for it), put together from the
    parts that change: the answer's id and its usage, around the text of the rest, which is the same
    for every answer of the step and comes from `_MEMO` (`_answer_parts`). No response object is made:
    only kept state reads one, on the few requests that keep a turn, and it encodes it itself then."""
    stop = _stop(turn)
    sequence = _stop_sequence(stop, conversation)
    model = conversation.model
    content = content_key(turn.message.content)
    size = len(model) + len(sequence or "")
    tag = ("answer", model, stop, sequence)
    head, middle = memoised_frames(_MEMO, tag, content, lambda: _answer_parts(turn, model, stop, sequence), size)
    usage = _usage_text(turn, turn.usage.output_tokens)
    return b"".join((head, _message_id(turn).encode(), middle, usage.encode(), b"}")), None


def _answer_parts(turn: ModelTurn, model: str, stop: str, sequence: str | None) -> tuple[bytes, bytes]:
    """A plain answer's bytes before its id, and between its id and its usage."""
    content = dumps(_response_blocks(turn.message))
    head = f'{{"model":{quote(model)},"id":"'
    middle = (
        f'","type":"message","role":"assistant","content":{content},"stop_reason":{dumps(stop)},'
        f'"stop_sequence":{dumps(sequence)},"usage":'
    )
    return to_bytes(head), to_bytes(middle)


def _usage_text(turn: ModelTurn, output_tokens: int) -> str:
    """`dumps(_usage(turn, output_tokens))`, written from the figures."""
    thinking = turn.reasoning_tokens
    details = ""
    if thinking and output_tokens >= thinking:
        details = f',"output_tokens_details":{{"thinking_tokens":{thinking}}}'
    return (
        f'{{"input_tokens":{turn.usage.input_tokens},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,'
        f'"cache_creation":{{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0}},'
        f'"output_tokens":{output_tokens}{details},"service_tier":"standard"}}'
    )


def encode_stream(turn: ModelTurn, conversation: Conversation) -> list[bytes]:
    """The recorded order (reference A.4): a ping after the first block starts, each tool block
    opening with `input: {}` and an empty `input_json_delta`, arguments in many fragments. The
    blocks' frames are the same for every answer of the step and come from `_MEMO` (see
    `sandbox.wire._frames`); `message_start` (the answer's id, the usage) and `message_delta` (the
    usage) are written per answer, as `_frame` writes them."""
    blocks = memoised_frames(_MEMO, (), content_key(turn.message.content), lambda: _blocks_frames(turn.message))
    start = (
        f'event: message_start\ndata: {{"type":"message_start","message":{{"model":{quote(conversation.model)},'
        f'"id":"{_message_id(turn)}","type":"message","role":"assistant","content":[],"stop_reason":null,'
        f'"stop_sequence":null,"usage":{_usage_text(turn, min(turn.usage.output_tokens, 1))}}}}}\n\n'
    )
    usage = turn.usage
    stop = _stop(turn)  # text: `quote` writes it as `dumps` does
    sequence = _stop_sequence(stop, conversation)
    delta = (
        f'event: message_delta\ndata: {{"type":"message_delta","delta":{{"stop_reason":{quote(stop)},'
        f'"stop_sequence":{"null" if sequence is None else dumps(sequence)}}},"usage":{{"input_tokens":'
        f'{usage.input_tokens},"cache_creation_input_tokens":0,"cache_read_input_tokens":0,'
        f'"output_tokens":{usage.output_tokens}}}}}\n\n'
    )
    return [to_bytes(start), *blocks, to_bytes(delta), _STOP]


def _blocks_frames(message: Message) -> tuple[bytes, ...]:
    """Every content block's frames, the ping after the first block's start (where C3 has it)."""
    frames: list[bytes] = []
    for index, block in enumerate(_response_blocks(message)):
        block_frames = _block_frames(index, block)
        if index == 0:
            block_frames.insert(1, _PING)
        frames += block_frames
    return tuple(frames)


def _frame(name: str, payload: dict[str, Any]) -> bytes:
    return sse_frame(dumps({"type": name, **payload}), event=name)


def _block_frames(index: int, block: dict[str, Any]) -> list[bytes]:
    # Each delta's frame is the JSON text `_frame` writes for it, put together from the parts that change.
    if block["type"] == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [f'{{"type":"text_delta","text":{quote(piece)}}}' for piece in split_fragments(block["text"])]
    elif block["type"] in ("thinking", "redacted_thinking"):
        start = stream_start(block)
        deltas = [dumps(delta) for delta in stream_deltas(block, split_fragments(block.get("thinking", "")))]
    else:
        start = {**block, "input": {}}
        arguments = dumps(block["input"]) if block["input"] else ""
        pieces = [""] + split_fragments(arguments)
        deltas = [f'{{"type":"input_json_delta","partial_json":{quote(piece)}}}' for piece in pieces]
    frames = [_frame("content_block_start", {"index": index, "content_block": start})]
    head = f'event: content_block_delta\ndata: {{"type":"content_block_delta","index":{index},"delta":'
    # each delta's frame as `sse_frame` writes it, from the text that changes
    frames += [to_bytes(f"{head}{delta}}}\n\n") for delta in deltas]
    frames.append(_block_stop(index))
    return frames


_PING = sse_frame(dumps({"type": "ping"}), event="ping")
_STOP = _frame("message_stop", {})
_MEMO = frame_memo()
"""A step's content block frames (`_blocks_frames`), by the turn's parts; a plain answer's text around
its id and usage (`_answer_parts`), by the turn's parts, the model, the stop reason and sequence."""


@functools.lru_cache(maxsize=64)
def _block_stop(index: int) -> bytes:
    """`content_block_stop` for block `index`: the same bytes for every answer."""
    return _frame("content_block_stop", {"index": index})


def error(
    status: int,
    message: str,
    *,
    rule: Rule,
    param: str | None = None,
    code: str | None = None,
    message_index: int | None = None,
) -> WireError:
    """Anthropic's envelope has no `param` or `code`; both are accepted and dropped."""
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    request_id = "req_011C" + stable_token(f"{status}:{message}", 20, BASE58)
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}
    headers = {
        "content-type": "application/json",
        "request-id": request_id,
        # Real 400s say false; we say it for every status, as a scripted error never heals on retry.
        "x-should-retry": "false",
    }
    return WireError(
        status,
        to_bytes(dumps(body)),
        message=message,
        rule=rule,
        headers=headers,
        message_index=message_index,
    )
