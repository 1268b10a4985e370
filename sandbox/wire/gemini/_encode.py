"""The fake side's answer in Gemini: the response, its stream (SSE frames of whole responses), and
Google's error envelope. Touches only a rendered `ModelTurn` and the request's `Conversation`; it
reads no request bytes.
"""

from __future__ import annotations

import json
from typing import Any

from ...messages._types import StopReason, Text
from .._base import (
    Conversation,
    ErrorResponse,
    ModelTurn,
    Rule,
    split_fragments,
    stable_token,
)
from .._sse import dumps, sse_frame
from ._client import encode_part, fake_part
from ._reasoning import encode_parts, is_thought

__all__ = ["answer_headers", "encode_response", "encode_stream", "error"]

_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_CALLS_MESSAGE = "Model generated function call(s)."
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
    409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL", 501: "UNIMPLEMENTED",
    503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}  # fmt: skip
_GOOGLE_STATUSES = {*_STATUS_NAMES.values(), "UNKNOWN", "FAILED_PRECONDITION", "OUT_OF_RANGE", "ALREADY_EXISTS"}
_BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def encode_response(turn: ModelTurn, conversation: Conversation) -> dict[str, Any]:
    parts = encode_parts(turn.message.content, fake_part)
    content: dict[str, Any] = {"parts": parts, "role": "model"} if parts else {"role": "model"}
    candidate = {"content": content, **_finish(turn), "index": 0}
    return {"candidates": [candidate], **_response_fields(turn, conversation)}


def encode_stream(turn: ModelTurn, conversation: Conversation) -> list[bytes]:
    """One complete response per chunk: text in small fragments, then every call whole in the
    final chunk (Gemini neither splits arguments nor spreads parallel calls over chunks, and
    google-genai's chat keeps each chunk as its own history turn), `finishReason` on the last.
    A thinking model's call chunk carries the signature and no `finishReason`; an empty text part
    follows with it, the Gemini 3 shape. Every chunk ends with the response's own fields (the usage,
    which counts the request)."""
    chunks = _thinking_chunks(turn) if turn.message.reasoning() else _chunks(turn)
    fields = _response_fields(turn, conversation)
    frames = []
    for number, parts in enumerate(chunks):
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
        if number == len(chunks) - 1:
            candidate.update(_finish(turn))
        candidate["index"] = 0
        frames.append(sse_frame(dumps({"candidates": [candidate], **fields}), newline="\r\n"))
    return frames


def _chunks(turn: ModelTurn) -> list[list[dict[str, Any]]]:
    """Each chunk's parts: the text in fragments, then the calls (or an empty text for the finish
    reason to ride on)."""
    chunks: list[list[dict[str, Any]]] = [
        [{"text": fragment}]
        for part in turn.message.content
        if isinstance(part, Text)
        for fragment in split_fragments(part.text)
    ]
    calls = [encode_part(part) for part in turn.message.tool_calls()]
    if calls or not chunks:
        chunks.append(calls or [{"text": ""}])
    return chunks


def _thinking_chunks(turn: ModelTurn) -> list[list[dict[str, Any]]]:
    thoughts = [part for part in turn.message.reasoning() if is_thought(part)]
    texts = [part for part in turn.message.content if isinstance(part, Text)]
    chunks = [[part.data()] for part in thoughts]
    chunks += [[{"text": fragment}] for part in texts for fragment in split_fragments(part.text)]
    rest = [part for part in turn.message.content if not isinstance(part, Text) and part not in thoughts]
    calls = encode_parts(rest, fake_part)
    if calls:
        chunks.append(calls)
    chunks.append([{"text": ""}])
    return chunks


def error(
    status: int,
    message: str,
    *,
    rule: Rule,
    param: str | None = None,
    code: str | None = None,
    message_index: int | None = None,
) -> ErrorResponse:
    """Google's envelope, pretty-printed as the real API sends it. A 400's `param` names the field
    (`details[].fieldViolations`, as proto conversion errors carry); a `code` that is a Google
    status name replaces the default one, any other code rides along as an ErrorInfo reason."""
    status_name = code if code in _GOOGLE_STATUSES else _STATUS_NAMES.get(status, "UNKNOWN")
    error: dict[str, Any] = {"code": status, "message": message, "status": status_name}
    details: list[dict[str, Any]] = []
    if param is not None and status == 400:
        violation = {"field": param, "description": message} if param else {"description": message}
        details.append({"@type": _BAD_REQUEST, "fieldViolations": [violation]})
    if code and code not in _GOOGLE_STATUSES:
        details.append({"@type": _ERROR_INFO, "reason": code.upper(), "domain": "skyl-sandbox"})
    if details:
        error["details"] = details
    # backslashreplace keeps a stray surrogate in a message a valid JSON escape, not a crash.
    body = (json.dumps({"error": error}, indent=2, ensure_ascii=False) + "\n").encode(errors="backslashreplace")
    headers = {"content-type": "application/json; charset=UTF-8"}
    return ErrorResponse(status, body, message=message, rule=rule, headers=headers, message_index=message_index)


def _finish(turn: ModelTurn) -> dict[str, Any]:
    reason = turn.raw_stop_reason or _FINISH.get(turn.stop_reason, "OTHER")
    fields: dict[str, Any] = {"finishReason": reason}
    if turn.message.tool_calls() and reason == "STOP":
        fields["finishMessage"] = _CALLS_MESSAGE  # what 2.5 and 3 send; the SDK drops it
    return fields


_FINISH = {
    StopReason.END_TURN: "STOP",
    StopReason.TOOL_USE: "STOP",  # there is no tool-use finish reason
    StopReason.STOP_SEQUENCE: "STOP",
    StopReason.MAX_TOKENS: "MAX_TOKENS",
    StopReason.REFUSAL: "SAFETY",
}


def _response_fields(turn: ModelTurn, conversation: Conversation) -> dict[str, Any]:
    """`usageMetadata`, `modelVersion` and `responseId` as Gemini 3 sends them (pydantic-ai
    `test_google/test_google_streaming_tool_call_thought_signature.yaml`): the thoughts counted apart
    in `thoughtsTokenCount` (absent when the turn did not think), `candidatesTokenCount` the answer
    alone, `totalTokenCount` the three added up (so does `test_google_instructions_only_with_tool_calls.yaml`,
    non-streamed: 83 + 30 + 292 = 405); a `responseId` of 23 characters, in both."""
    usage = turn.usage
    metadata: dict[str, Any] = {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens - turn.reasoning_tokens,
        "totalTokenCount": usage.total_tokens,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": usage.input_tokens}],
    }
    if turn.reasoning_tokens:
        metadata["thoughtsTokenCount"] = turn.reasoning_tokens
    return {
        "usageMetadata": metadata,
        "modelVersion": conversation.model,
        "responseId": stable_token(turn.seed, 23, _B64URL),
    }


_SERVER_TIMING = {f"{value:02x}": f"gfet4t7; dur={1000 + value * 4000 // 256}" for value in range(256)}
"""A plausible `server-timing` (1000-4984 ms) by the first two hex digits of an answer's identity."""


def answer_headers(request_digest: str, *, stream: bool) -> dict[str, str]:
    """The headers Google's front end adds to an answer: `server-timing` (its time, here derived from
    the request so it is the same on every run) and `vary` on every one, `content-disposition:
    attachment` on a stream (pydantic-ai cassettes `test_google_streaming_tool_call_thought_signature.yaml`,
    streamed, and `test_google_instructions_only_with_tool_calls.yaml`, not)."""
    timing = _SERVER_TIMING.get(request_digest[:2], "gfet4t7; dur=1000")
    headers = {"content-disposition": "attachment"} if stream else {}
    return {**headers, "server-timing": timing, "vary": "Origin, X-Origin, Referer"}
