"""The fake side's answer in Chat Completions: the completion, its SSE stream, and the error envelope.
Touches only a rendered `ModelTurn` and the request's `Conversation`; it reads no request bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...messages._types import StopReason, ToolCall, Usage
from .._base import (
    CREATED_AT,
    HEX,
    Conversation,
    ModelTurn,
    Rule,
    WireError,
    split_fragments,
    stable_token,
    unique_token,
)
from .._frames import content_key, frame_memo, memoised_frames
from .._openai import openai_error
from .._sse import dumps, quote, sse_frame, to_bytes
from ._client import encode_call

__all__ = ["encode_answer", "encode_response", "encode_stream", "error"]

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


def encode_answer(turn: ModelTurn, conversation: Conversation) -> tuple[bytes, None]:
    """`encode_response`'s body as it goes out (the text `dumps` writes for it), put together from the
    parts that change: the answer's id and its usage figures, between the text of the rest, which is
    the same for every answer of the step and comes from `_MEMO` (`_answer_parts`). Kept state stores
    nothing of a Chat Completions answer."""
    model = conversation.model
    finish = _finish_reason(turn, conversation)
    content = content_key(turn.message.content)
    parts = memoised_frames(
        _MEMO, ("answer", model, finish), content, lambda: _answer_parts(turn, model, finish), len(model)
    )
    usage = turn.usage
    figures = f'{usage.input_tokens},"completion_tokens":{usage.output_tokens},"total_tokens":{usage.total_tokens},'
    middle, end = parts
    return b"".join((b'{"id":"', _completion_id(turn).encode(), middle, figures.encode(), end)), None


def _answer_parts(turn: ModelTurn, model: str, finish: str) -> tuple[bytes, bytes]:
    """A plain answer's bytes between its id and its first usage figure, and after the last figure."""
    calls = turn.message.tool_calls()
    text = turn.message.text()
    content = quote(text) if text or not calls else "null"
    tool_calls = f',"tool_calls":[{",".join(map(_call_text, calls))}]' if calls else ""
    middle = (
        f'","object":"chat.completion","created":{CREATED_AT},"model":{quote(model)},"choices":[{{"index":0,'
        f'"message":{{"role":"assistant","content":{content},"refusal":null,"annotations":[]{tool_calls}}},'
        f'"logprobs":null,"finish_reason":{dumps(finish)}}}],"usage":{{"prompt_tokens":'
    )
    end = f'{_USAGE_DETAILS}}},"service_tier":"default","system_fingerprint":"{_fingerprint(model)}"}}'
    return to_bytes(middle), to_bytes(end)


def encode_stream(turn: ModelTurn, conversation: Conversation) -> list[bytes]:
    """Frames shaped like recordings/openai-chat-{tool,parallel}-stream.sse.

    A lone call opens inside the role chunk (the single-call recording); several calls each open
    in a chunk of their own after a bare role chunk (the parallel recording); calls never interleave.
    Every chunk starts with the answer's id; what follows it is the same for every answer of the step
    and comes from `_MEMO` (see `sandbox.wire._frames`), the usage figures put in per answer.
    """
    options = conversation.raw.get("stream_options")
    # a decoded body's options are a dict: tested first, as the ABC's check costs more than the rest
    usage = (type(options) is dict or isinstance(options, Mapping)) and options.get("include_usage") is True
    model = conversation.model
    finish = _finish_reason(turn, conversation)
    content = content_key(turn.message.content)
    tag = ("stream", model, finish, usage)
    tails = memoised_frames(_MEMO, tag, content, lambda: _tails(turn, model, finish, usage), len(model))
    head = b'data: {"id":"' + _completion_id(turn).encode()
    frames = [head + tail for tail in tails]
    if usage:  # the last chunk's usage, which counts the request
        figures = turn.usage
        frames[-1] += (
            f'{figures.input_tokens},"completion_tokens":{figures.output_tokens},'
            f'"total_tokens":{figures.total_tokens},{_USAGE_DETAILS}}}}}\n\n'
        ).encode()
    frames.append(_DONE)
    return frames


def _tails(turn: ModelTurn, model: str, finish: str, usage: bool) -> tuple[bytes, ...]:
    """Each chunk's bytes after its answer's id, and with `usage` the usage chunk's up to its first
    figure: what every answer of the step sends alike."""
    calls = turn.message.tool_calls()
    text = turn.message.text()
    deltas: list[str] = []  # each chunk's `delta`, as JSON text
    if text or not calls:
        deltas.append(dumps({"role": "assistant", "content": "", "refusal": None}))
        deltas += [f'{{"content":{quote(fragment)}}}' for fragment in split_fragments(text)]
    elif len(calls) > 1:
        deltas.append(dumps({"role": "assistant", "content": None}))
    for index, call in enumerate(calls):
        arguments = dumps(dict(call.arguments))  # `arguments_json`'s text, the encoder made once
        opening = {
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        if not deltas:
            deltas.append(dumps({"role": "assistant", "content": None, "tool_calls": [opening], "refusal": None}))
        else:
            deltas.append(dumps({"tool_calls": [opening]}))
        deltas += [
            f'{{"tool_calls":[{{"index":{index},"function":{{"arguments":{quote(fragment)}}}}}]}}'
            for fragment in split_fragments(arguments)
        ]
    # Every chunk is `_envelope`'s fields with its `choices` (and, with usage asked for, `"usage": null`
    # until the last one carries it: pydantic-ai cassette test_openai/test_run_stream_sync_streams_real_model.yaml,
    # 2026): the JSON text `dumps` writes for that object (after the id), put together from the parts that change.
    fields = (
        f'","object":"chat.completion.chunk","created":{CREATED_AT},"model":{quote(model)},'
        f'"service_tier":"default","system_fingerprint":"{_fingerprint(model)}"'
    )
    start = f'{fields},"choices":[{{"index":0,"delta":'
    end = ',"usage":null}' if usage else "}"
    # each frame as `sse_frame` writes it
    tails = [f'{start}{delta},"logprobs":null,"finish_reason":null}}]{end}\n\n' for delta in deltas]
    tails.append(f'{start}{{}},"logprobs":null,"finish_reason":{dumps(finish)}}}]{end}\n\n')
    if usage:
        tails.append(f'{fields},"choices":[],"usage":{{"prompt_tokens":')
    return tuple(map(to_bytes, tails))


def error(
    status: int,
    message: str,
    *,
    rule: Rule,
    param: str | None = None,
    code: str | None = None,
    message_index: int | None = None,
) -> WireError:
    kind = "server_error" if status >= 500 else "invalid_request_error"
    envelope = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return openai_error(status, envelope, rule=rule, message_index=message_index)


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


def _call_text(call: ToolCall) -> str:
    """`dumps(encode_call(call))`, written from its parts (`arguments_json`'s text from `dumps`)."""
    arguments = quote(dumps(dict(call.arguments)))
    function = f'{{"name":{quote(call.name)},"arguments":{arguments}}}'
    return f'{{"id":{quote(call.id)},"type":"function","function":{function}}}'


_DONE = sse_frame("[DONE]")
_MEMO = frame_memo()
"""A step's chunks after their id (`_tails`), by the turn's parts, the model, the finish reason and
whether usage was asked for; a plain answer's text around its id and usage (`_answer_parts`), by the
turn's parts, the model and the finish reason."""
_USAGE_DETAILS = dumps({key: value for key, value in _encode_usage(Usage()).items() if key.endswith("_details")})[1:-1]
"""The usage's fixed breakdowns as JSON text (`"prompt_tokens_details":{...},...`), written once."""
