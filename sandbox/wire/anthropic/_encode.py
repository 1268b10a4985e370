"""The fake side's answer in Anthropic Messages: the message, its SSE stream, the error envelope, and
the request id they carry. Touches only a rendered `ModelTurn` and the request's `Conversation`; it
reads no request bytes.
"""

from __future__ import annotations

import json
from typing import Any

from ..._exceptions import UsageError
from ...messages._types import Message, ToolResult
from .._base import (
    BASE58,
    Conversation,
    ErrorResponse,
    ModelTurn,
    Rule,
    split_fragments,
    stable_token,
    unique_token,
)
from .._sse import dumps, sse_frame, to_bytes
from ._client import ERROR_TYPES, WIRE_STOP, wire_blocks
from ._reasoning import stream_deltas, stream_start

__all__ = ["encode_response", "encode_stream", "error", "identified_error_body", "request_id"]


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


def identified_error_body(error: ErrorResponse, request_digest: str) -> bytes:
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
    """
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


def encode_stream(turn: ModelTurn, conversation: Conversation) -> list[bytes]:
    """The recorded order (reference A.4): a ping after the first block starts, each tool block
    opening with `input: {}` and an empty `input_json_delta`, arguments in many fragments."""
    message: dict[str, Any] = {
        "model": conversation.model,
        "id": _message_id(turn),
        "type": "message",
        "role": "assistant",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage(turn, min(turn.usage.output_tokens, 1)),
    }
    frames = [_frame("message_start", {"message": message})]
    for index, block in enumerate(_response_blocks(turn.message)):
        block_frames = _block_frames(index, block)
        if index == 0:
            block_frames.insert(1, _PING)
        frames += block_frames
    stop = _stop(turn)
    usage = {
        "input_tokens": turn.usage.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": turn.usage.output_tokens,
    }
    delta = {"stop_reason": stop, "stop_sequence": _stop_sequence(stop, conversation)}
    frames.append(_frame("message_delta", {"delta": delta, "usage": usage}))
    frames.append(_STOP)
    return frames


def _frame(name: str, payload: dict[str, Any]) -> bytes:
    return sse_frame(dumps({"type": name, **payload}), event=name)


def _block_frames(index: int, block: dict[str, Any]) -> list[bytes]:
    deltas: list[dict[str, Any]]
    if block["type"] == "text":
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in split_fragments(block["text"])]
    elif block["type"] in ("thinking", "redacted_thinking"):
        start = stream_start(block)
        deltas = stream_deltas(block, split_fragments(block.get("thinking", "")))
    else:
        start = {**block, "input": {}}
        arguments = dumps(block["input"]) if block["input"] else ""
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in ["", *split_fragments(arguments)]]
    frames = [_frame("content_block_start", {"index": index, "content_block": start})]
    frames += [_frame("content_block_delta", {"index": index, "delta": delta}) for delta in deltas]
    frames.append(_frame("content_block_stop", {"index": index}))
    return frames


_PING = sse_frame(dumps({"type": "ping"}), event="ping")
_STOP = _frame("message_stop", {})


def error(
    status: int,
    message: str,
    *,
    rule: Rule,
    param: str | None = None,
    code: str | None = None,
    message_index: int | None = None,
) -> ErrorResponse:
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
    return ErrorResponse(
        status,
        to_bytes(dumps(body)),
        message=message,
        rule=rule,
        headers=headers,
        message_index=message_index,
    )
