"""The fake side's answer in Chat Completions: the completion, its SSE stream, and the error envelope.
Touches only a rendered `ModelTurn` and the request's `Conversation`; it reads no request bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...messages._types import StopReason, Usage
from .._base import (
    CREATED_AT,
    HEX,
    Conversation,
    ModelTurn,
    split_fragments,
    stable_token,
    unique_token,
)
from .._openai import openai_error as error  # the envelope Responses answers with too
from .._sse import dumps, sse_frame
from ._client import encode_call

__all__ = ["encode_response", "encode_stream", "error"]

_FINISH_REASONS = {
    StopReason.TOOL_USE: "tool_calls",
    StopReason.END_TURN: "stop",
    StopReason.STOP_SEQUENCE: "stop",
    StopReason.MAX_TOKENS: "length",
    StopReason.REFUSAL: "content_filter",
    StopReason.OTHER: "stop",
}


def encode_response(turn: ModelTurn, conversation: Conversation) -> dict[str, Any]:
    calls = turn.message.tool_calls()
    text = turn.message.text()
    message: dict[str, Any] = {
        "role": "assistant",
        # content and refusal stay null on a tool-call turn, as real traffic sends them.
        "content": text if text or not calls else None,
        "refusal": None,
        "annotations": [],
    }
    if calls:  # never "tool_calls": [] (the API rejects that on replay, error C6)
        message["tool_calls"] = [encode_call(call) for call in calls]
    body = _envelope(turn, conversation, "chat.completion")
    # Last in the recorded body, unlike in chunks.
    tail = {key: body.pop(key) for key in ("service_tier", "system_fingerprint")}
    body["choices"] = [
        {
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": _finish_reason(turn, conversation),
        }
    ]
    body["usage"] = _encode_usage(turn.usage)
    body.update(tail)
    return body


def encode_stream(turn: ModelTurn, conversation: Conversation) -> list[bytes]:
    """Frames shaped like recordings/openai-chat-{tool,parallel}-stream.sse.

    A lone call opens inside the role chunk (the single-call recording); several calls each open
    in a chunk of their own after a bare role chunk (the parallel recording); calls never interleave.
    With `stream_options.include_usage`, every chunk carries `"usage": null` until a last one with no
    choices carries it.
    """
    options = conversation.raw.get("stream_options")
    usage = isinstance(options, Mapping) and options.get("include_usage") is True
    envelope = _envelope(turn, conversation, "chat.completion.chunk")
    tail = {"usage": None} if usage else {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return sse_frame(dumps({**envelope, "choices": [choice], **tail}))

    frames = [chunk(delta) for delta in _deltas(turn)]
    frames.append(chunk({}, _finish_reason(turn, conversation)))
    if usage:
        frames.append(sse_frame(dumps({**envelope, "choices": [], "usage": _encode_usage(turn.usage)})))
    frames.append(_DONE)
    return frames


def _deltas(turn: ModelTurn) -> list[dict[str, Any]]:
    """Each chunk's `delta` before the finishing one: the prose in fragments, then each call's opening
    and its arguments in fragments."""
    calls = turn.message.tool_calls()
    text = turn.message.text()
    deltas: list[dict[str, Any]] = []
    if text or not calls:
        deltas.append({"role": "assistant", "content": "", "refusal": None})
        deltas += [{"content": fragment} for fragment in split_fragments(text)]
    elif len(calls) > 1:
        deltas.append({"role": "assistant", "content": None})
    for index, call in enumerate(calls):
        opening = {"index": index, "id": call.id, "type": "function", "function": {"name": call.name, "arguments": ""}}
        if not deltas:
            deltas.append({"role": "assistant", "content": None, "tool_calls": [opening], "refusal": None})
        else:
            deltas.append({"tool_calls": [opening]})
        deltas += [
            {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}
            for fragment in split_fragments(dumps(dict(call.arguments)))
        ]
    return deltas


def _finish_reason(turn: ModelTurn, conversation: Conversation) -> str:
    if turn.raw_stop_reason is not None:
        return turn.raw_stop_reason
    if turn.stop_reason is StopReason.TOOL_USE and conversation.forced_tool_choice:
        return "stop"  # what OpenAI sends under a forced tool_choice (reference 2.5)
    return _FINISH_REASONS[turn.stop_reason]


def _envelope(turn: ModelTurn, conversation: Conversation, kind: str) -> dict[str, Any]:
    """The fields every body and chunk repeats, in the recorded key order."""
    return {
        "id": _completion_id(turn),
        "object": kind,
        "created": CREATED_AT,
        "model": conversation.model,
        "service_tier": "default",
        "system_fingerprint": _fingerprint(conversation.model),
    }


def _completion_id(turn: ModelTurn) -> str:
    """The answer's `id`, the same in its body and in each of its chunks."""
    return "chatcmpl-" + unique_token(f"chatcmpl:{turn.response_seed}", 29)


def _fingerprint(model: str) -> str:
    """The `system_fingerprint`, one per model (its alphabet needs no JSON escapes)."""
    return "fp_" + stable_token(f"fp:{model}", 10, HEX)


def _encode_usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


_DONE = sse_frame("[DONE]")
