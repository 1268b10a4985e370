"""The skyl client's side of Anthropic Messages: the request it sends (consecutive tool messages
merged into one user turn), and the message it reads, whole or streamed. Touches only the neutral
types, the client half of the wire contract and thinking blocks' client half (`_reasoning`); the
fake side borrows its block encoding and the stop and error names, the same on both sides.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..._exceptions import ProviderError
from ...messages._events import MessageEnd, StreamEvent, TextDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from ...messages._types import Message, Part, Reasoning, Request, Response, StopReason, Text, Tool, ToolCall, Usage
from .._base import (
    EncodedRequest,
    StreamDecoder,
)
from .._reasoning import check_provider
from .._sse import SSEEvent
from ._reasoning import ThinkingStream, decode_block

__all__ = [
    "API_VERSION",
    "ERROR_TYPES",
    "PROVIDER",
    "WIRE_STOP",
    "MessagesStreamDecoder",
    "decode_response",
    "encode_request",
    "wire_blocks",
]

API_VERSION = "2023-06-01"
PROVIDER = "anthropic"

_STOP_REASONS = {
    "end_turn": StopReason.END_TURN,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "stop_sequence": StopReason.STOP_SEQUENCE,
    "refusal": StopReason.REFUSAL,
}
WIRE_STOP = {reason: name for name, reason in _STOP_REASONS.items()}
WIRE_STOP[StopReason.OTHER] = "pause_turn"  # the one documented value with no neutral twin

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
ERROR_STATUS = {name: status for status, name in ERROR_TYPES.items()}


def _bad(what: str) -> ProviderError:
    """Provider output we cannot read (in a 200 answer): say so in words, never with a KeyError traceback."""
    return ProviderError(
        f"Anthropic sent output that is not the Messages API format: {what}", status=200, provider=PROVIDER
    )


_KIND_NAMES: dict[type, str] = {str: "a string", int: "an integer", dict: "an object", list: "a list"}


def _field(data: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    """`data[key]` when it has the documented type; otherwise a ProviderError naming the field."""
    value = data.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise _bad(f"{where}.{key} should be {_KIND_NAMES[kind]}, got {value!r:.200}")
    return value


def _stop_reason(value: Any) -> StopReason:
    return _STOP_REASONS.get(value, StopReason.OTHER) if isinstance(value, str) else StopReason.OTHER


def _usage(data: Mapping[str, Any], where: str, *, input_tokens: int = 0) -> Usage:
    usage = _field(data, "usage", dict, where)
    tokens = usage.get("input_tokens")
    if tokens is not None:
        input_tokens = _field(usage, "input_tokens", int, f"{where}.usage")
    return Usage(input_tokens, _field(usage, "output_tokens", int, f"{where}.usage"))


def _arguments(call_id: str, name: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _bad(f"the arguments of tool call {call_id!r} ({name}) are not a JSON object: {value!r}")
    return value


# -- client side: encoding ----------------------------------------------------------------------------


def wire_blocks(message: Message) -> list[dict[str, Any]]:
    check_provider(message, PROVIDER)
    blocks: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, Reasoning):
            blocks.append(part.data())  # exactly as received: the API checks the signature
        elif isinstance(part, Text):
            if part.text:  # the API rejects empty text blocks; an empty part carries nothing
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCall):
            blocks.append({"type": "tool_use", "id": part.id, "name": part.name, "input": dict(part.arguments)})
        else:
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": part.call_id,
                "content": part.content,
            }
            if part.is_error:
                result["is_error"] = True
            blocks.append(result)
    return blocks


def _content(message: Message) -> str | list[dict[str, Any]]:
    """A user turn of one text is sent as a string, the documented shorthand (reference A.3)."""
    if message.role == "user" and len(message.content) == 1 and isinstance(message.content[0], Text):
        return message.content[0].text
    return wire_blocks(message)


def _encode_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Tool messages in a row become one user turn of `tool_result`s; a user message right after
    them joins that turn after the results, where the API wants any text."""
    turns = [message for message in messages if message.role != "system"]
    encoded: list[dict[str, Any]] = []
    index = 0
    while index < len(turns):
        message = turns[index]
        index += 1
        if message.role != "tool":
            encoded.append({"role": message.role, "content": _content(message)})
            continue
        blocks = wire_blocks(message)
        while index < len(turns) and turns[index].role == "tool":
            blocks += wire_blocks(turns[index])
            index += 1
        if index < len(turns) and turns[index].role == "user":
            blocks += wire_blocks(turns[index])
            index += 1
        encoded.append({"role": "user", "content": blocks})
    return encoded


def _encode_tool_choice(choice: str) -> dict[str, Any]:
    if choice in ("auto", "none"):
        return {"type": choice}
    if choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": choice}


def _encode_tool(tool: Tool) -> dict[str, Any]:
    encoded: dict[str, Any] = {"name": tool.name}
    if tool.description:
        encoded["description"] = tool.description
    encoded["input_schema"] = dict(tool.parameters)
    return encoded


# -- client side: stream decoding ---------------------------------------------------------------------


@dataclass
class _OpenBlock:
    kind: str
    call_index: int = -1
    call_id: str = ""
    name: str = ""
    fragments: list[str] = field(default_factory=list)
    thinking: ThinkingStream | None = None


class MessagesStreamDecoder(StreamDecoder):
    """`message_start`, then `content_block_start/delta/stop` per block, `message_delta`, `message_stop`."""

    def __init__(self) -> None:
        self._started = False
        self._done = False
        self._id = ""
        self._model = ""
        self._usage = Usage()
        self._stop: str | None = None
        self._open: dict[int, _OpenBlock] = {}
        self._calls = 0
        self._thoughts = 0

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        if event.event == "ping":
            return []
        try:
            data = json.loads(event.data)
        except (ValueError, RecursionError):
            raise _bad(f"the data of a {event.event or 'nameless'} event is not JSON: {event.data[:200]!r}") from None
        if not isinstance(data, dict):
            raise _bad(f"the data of a {event.event or 'nameless'} event is not an object: {event.data[:200]!r}")
        name = event.event or data.get("type")
        if name == "error":
            raise self._error(data)
        if self._done:
            raise _bad(f"a {name} event arrived after message_stop")
        if not self._started and name != "message_start":
            raise _bad(f"the stream sent {name!r} before message_start")
        handler = self._HANDLERS.get(name) if isinstance(name, str) else None
        # Anthropic documents that new event types may appear and should be ignored.
        return handler(self, data) if handler else []

    def finish(self) -> list[StreamEvent]:
        if not self._done:
            got = "no events at all" if not self._started else "no message_stop"
            raise _bad(f"the stream ended before the turn was complete ({got})")
        return []

    @staticmethod
    def _error(data: Mapping[str, Any]) -> ProviderError:
        error = data.get("error")
        if not isinstance(error, dict) or not isinstance(error.get("message"), str):
            return _bad(f"an error event without an error message: {data!r}")
        kind = error["type"] if isinstance(error.get("type"), str) else ""
        return ProviderError(
            error["message"],
            status=ERROR_STATUS.get(kind, 500),
            provider=PROVIDER,
            error_type=kind,
            body=data,
        )

    def _message_start(self, data: Mapping[str, Any]) -> list[StreamEvent]:
        message = _field(data, "message", dict, "message_start")
        self._id = _field(message, "id", str, "message_start.message")
        self._model = _field(message, "model", str, "message_start.message")
        self._usage = _usage(message, "message_start.message")
        self._started = True
        return []

    def _block(self, data: Mapping[str, Any], where: str) -> tuple[int, _OpenBlock]:
        index = _field(data, "index", int, where)
        if index not in self._open:
            raise _bad(f"{where} for content block {index}, which is not open")
        return index, self._open[index]

    def _block_start(self, data: Mapping[str, Any]) -> list[StreamEvent]:
        index = _field(data, "index", int, "content_block_start")
        if index in self._open:
            raise _bad(f"content block {index} started twice")
        block = _field(data, "content_block", dict, "content_block_start")
        kind = block.get("type")
        if kind == "tool_use":
            call_id = _field(block, "id", str, "content_block_start.content_block")
            name = _field(block, "name", str, "content_block_start.content_block")
            self._open[index] = _OpenBlock("tool_use", self._calls, call_id, name)
            self._calls += 1
            return [ToolCallStart(self._calls - 1, call_id, name)]
        if kind in ("thinking", "redacted_thinking"):
            self._open[index] = _OpenBlock(kind, thinking=ThinkingStream(self._thoughts, block))
            self._thoughts += 1
            return []
        self._open[index] = _OpenBlock(kind if isinstance(kind, str) else "")
        text = block.get("text") if kind == "text" else None
        return [TextDelta(text)] if isinstance(text, str) and text else []

    def _block_delta(self, data: Mapping[str, Any]) -> list[StreamEvent]:
        _, block = self._block(data, "content_block_delta")
        delta = _field(data, "delta", dict, "content_block_delta")
        kind = delta.get("type")
        if kind == "text_delta":
            text = _field(delta, "text", str, "content_block_delta.delta")
            return [TextDelta(text)] if text else []
        if kind == "input_json_delta":
            if block.kind != "tool_use":
                raise _bad(f"input_json_delta for a {block.kind or 'untyped'} block")
            fragment = _field(delta, "partial_json", str, "content_block_delta.delta")
            block.fragments.append(fragment)
            return [ToolCallDelta(block.call_index, fragment)] if fragment else []
        if block.thinking is not None:
            return block.thinking.delta(delta)
        return []  # citation deltas carry nothing the neutral model keeps

    def _block_stop(self, data: Mapping[str, Any]) -> list[StreamEvent]:
        index, block = self._block(data, "content_block_stop")
        del self._open[index]
        if block.thinking is not None:
            return block.thinking.end()
        if block.kind != "tool_use":
            return []
        text = "".join(block.fragments)
        try:
            arguments = json.loads(text) if text else {}
        except (ValueError, RecursionError):
            raise _bad(
                f"the arguments of tool call {block.call_id!r} ({block.name}) are not valid JSON: {text!r}"
            ) from None
        _arguments(block.call_id, block.name, arguments)
        return [ToolCallEnd(block.call_index)]

    def _message_delta(self, data: Mapping[str, Any]) -> list[StreamEvent]:
        delta = _field(data, "delta", dict, "message_delta")
        stop = delta.get("stop_reason")
        self._stop = stop if isinstance(stop, str) else self._stop
        self._usage = _usage(data, "message_delta", input_tokens=self._usage.input_tokens)
        return []

    def _message_stop(self, data: Mapping[str, Any]) -> list[StreamEvent]:
        if self._open:
            raise _bad(f"message_stop while content block(s) {sorted(self._open)} were still open")
        if self._stop is None:
            raise _bad("message_stop before any message_delta gave a stop_reason")
        self._done = True
        return [MessageEnd(_stop_reason(self._stop), self._usage, self._model, self._id)]

    _HANDLERS = {
        "message_start": _message_start,
        "content_block_start": _block_start,
        "content_block_delta": _block_delta,
        "content_block_stop": _block_stop,
        "message_delta": _message_delta,
        "message_stop": _message_stop,
    }


# -- fake side --------------------------------------------------------------------------------------


def encode_request(request: Request, *, stream: bool, api_key: str | None) -> EncodedRequest:
    body: dict[str, Any] = {"model": request.model, "max_tokens": request.max_tokens}
    system = [request.system] if request.system else []
    system += [message.text() for message in request.messages if message.role == "system"]
    if system:
        body["system"] = "\n\n".join(system)
    body["messages"] = _encode_messages(request.messages)
    if request.tools:
        body["tools"] = [_encode_tool(tool) for tool in request.tools]
    if request.tool_choice is not None:
        body["tool_choice"] = _encode_tool_choice(request.tool_choice)
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.stop_sequences:
        body["stop_sequences"] = list(request.stop_sequences)
    if request.reasoning:
        body["thinking"] = {"type": "adaptive"}  # no budget to keep below max_tokens
    if stream:
        body["stream"] = True
    headers = {"anthropic-version": API_VERSION, "content-type": "application/json"}
    if api_key is not None:
        headers["x-api-key"] = api_key
    return EncodedRequest("/v1/messages", body, headers)


def decode_response(data: Any) -> Response:
    if not isinstance(data, dict):
        raise _bad(f"the response body is not a JSON object: {data!r:.200}")
    parts: list[Part] = []
    for index, block in enumerate(_field(data, "content", list, "response")):
        where = f"response.content[{index}]"
        if not isinstance(block, dict):
            raise _bad(f"{where} is not an object: {block!r}")
        if block.get("type") == "text":
            parts.append(Text(_field(block, "text", str, where)))
        elif block.get("type") in ("thinking", "redacted_thinking"):
            parts.append(decode_block(block))
        elif block.get("type") == "tool_use":
            call_id = _field(block, "id", str, where)
            name = _field(block, "name", str, where)
            parts.append(ToolCall(call_id, name, _arguments(call_id, name, block.get("input"))))
    return Response(
        message=Message("assistant", parts),
        stop_reason=_stop_reason(_field(data, "stop_reason", str, "response")),
        usage=_usage(data, "response"),
        model=_field(data, "model", str, "response"),
        id=_field(data, "id", str, "response"),
        raw=data,
    )
