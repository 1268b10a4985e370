"""The Anthropic Messages wire format (`POST /v1/messages`), on both sides of the wire.

Tool calls are `tool_use` content blocks of the assistant turn; their answers are `tool_result`
blocks that must open the next user turn. The neutral model keeps one `tool` message per result, so
the client merges consecutive tool messages (and a user message right after them) into one user
turn, and the fake splits that turn again. Request validation lives in `anthropic_validate`;
thinking blocks and their echo rules in `anthropic_reasoning`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._events import MessageEnd, StreamEvent, TextDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from .._exceptions import ProviderError, UsageError
from .._types import (
    Message,
    Part,
    Reasoning,
    Request,
    Response,
    Role,
    StopReason,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
)
from ._base import (
    BASE58,
    Conversation,
    EncodedRequest,
    ModelTurn,
    Rule,
    StreamDecoder,
    WireError,
    WireFormat,
    split_fragments,
    stable_token,
)
from ._reasoning import check_provider
from ._sse import SSEEvent, dumps, sse_frame, to_bytes
from .anthropic_reasoning import (
    ThinkingStream,
    check_echo,
    check_final_turn,
    decode_block,
    stream_deltas,
    stream_start,
    thinking_blocks,
)
from .anthropic_validate import Block, Body, Invalid, check_rules, load_json, validate_schema

__all__ = ["WIRE", "Anthropic"]

API_VERSION = "2023-06-01"
_PROVIDER = "anthropic"

_STOP_REASONS = {
    "end_turn": StopReason.END_TURN,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "stop_sequence": StopReason.STOP_SEQUENCE,
    "refusal": StopReason.REFUSAL,
}
_WIRE_STOP = {reason: name for name, reason in _STOP_REASONS.items()}
_WIRE_STOP[StopReason.OTHER] = "pause_turn"  # the one documented value with no neutral twin

_ERROR_TYPES = {
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
_ERROR_STATUS = {name: status for status, name in _ERROR_TYPES.items()}


def _bad(what: str) -> ProviderError:
    """Provider output we cannot read (in a 200 answer): say so in words, never with a KeyError traceback."""
    return ProviderError(
        f"Anthropic sent output that is not the Messages API format: {what}", status=200, provider=_PROVIDER
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


def _blocks(message: Message) -> list[dict[str, Any]]:
    check_provider(message, _PROVIDER)
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
    return _blocks(message)


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
        blocks = _blocks(message)
        while index < len(turns) and turns[index].role == "tool":
            blocks += _blocks(turns[index])
            index += 1
        if index < len(turns) and turns[index].role == "user":
            blocks += _blocks(turns[index])
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


class _StreamDecoder(StreamDecoder):
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
            status=_ERROR_STATUS.get(kind, 500),
            provider=_PROVIDER,
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


@dataclass
class _Neutral:
    """The request in the neutral model, and where each wire message and result landed in it."""

    messages: list[Message] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    first: list[int] = field(default_factory=list)
    """Wire message i -> the index of its first neutral message."""
    results: dict[tuple[int, int], int] = field(default_factory=dict)
    """(wire message, block) of a `tool_result` -> its neutral `tool` message."""

    def add(self, message: Message, path: str) -> None:
        self.messages.append(message)
        self.paths.append(path)

    def index_of(self, error: Invalid) -> int | None:
        if error.message_index is None:
            return None
        if error.block_index is not None and (error.message_index, error.block_index) in self.results:
            return self.results[error.message_index, error.block_index]
        return self.first[error.message_index]


_ROLES: dict[str, Role] = {"assistant": "assistant", "system": "system"}


def _parts(blocks: Sequence[Block]) -> list[Part]:
    parts: list[Part] = []
    for block in blocks:
        if block.kind == "text":
            parts.append(Text(block.text))
        elif block.kind == "tool_use":
            parts.append(ToolCall(block.id, block.name, block.input))
        elif block.kind == "tool_result":
            parts.append(ToolResult(block.tool_use_id, block.content, block.is_error))
        elif block.reasoning is not None:
            parts.append(decode_block(block.reasoning))
    return parts  # images, documents, server-tool blocks: nothing the neutral model keeps


def _neutral(body: Body) -> _Neutral:
    neutral = _Neutral()
    if body.system:
        neutral.add(Message("system", [Text(text) for text in body.system]), "system")
    for index, message in enumerate(body.messages):
        path = f"messages[{index}]"
        neutral.first.append(len(neutral.messages))
        if message.role != "user":
            neutral.add(Message(_ROLES[message.role], _parts(message.blocks)), path)
            continue
        others = []
        for position, block in enumerate(message.blocks):
            if block.kind == "tool_result":
                neutral.results[index, position] = len(neutral.messages)
                neutral.add(Message("tool", _parts([block])), path)
            else:
                others.append(block)
        if others or not any(block.kind == "tool_result" for block in message.blocks):
            neutral.add(Message("user", _parts(others)), path)
    return neutral


def _response_blocks(message: Message) -> list[dict[str, Any]]:
    blocks = []
    for part in message.content:
        if isinstance(part, ToolResult):
            raise UsageError(
                f"A scripted Anthropic turn cannot hold a tool result ({part!r}): a model turn holds "
                "text and tool calls only. Put the result in the conversation instead."
            )
        blocks.extend(_blocks(Message("assistant", [part])))
    return blocks


class Anthropic(WireFormat):
    """Anthropic Messages: `POST https://api.anthropic.com/v1/messages`."""

    name = _PROVIDER
    base_url = "https://api.anthropic.com"
    stream_media_type = "text/event-stream; charset=utf-8"  # [CAP C3]

    @staticmethod
    def _request_id(request_digest: str) -> str:
        return "req_011C" + stable_token(f"request-id:{request_digest}", 20, BASE58)

    def request_headers(self, request_digest: str) -> dict[str, str]:
        """`request-id`, which the SDK reads into `message._request_id` and `exc.request_id` (reference A.5)."""
        return {"request-id": self._request_id(request_digest)}

    def identified_error_body(self, error: WireError, request_digest: str) -> bytes:
        """The body repeats the header's request id as its top-level `request_id` (reference A.5)."""
        try:
            body = json.loads(error.body)
        except ValueError:
            return error.body
        if not isinstance(body, dict) or "request_id" not in body:
            return error.body
        return to_bytes(dumps({**body, "request_id": self._request_id(request_digest)}))

    # -- client side -------------------------------------------------------------------------------

    def encode_request(self, request: Request, *, stream: bool, api_key: str | None) -> EncodedRequest:
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

    def decode_response(self, data: Any) -> Response:
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

    def stream_decoder(self) -> StreamDecoder:
        return _StreamDecoder()

    # -- fake side ---------------------------------------------------------------------------------

    def parse_request(self, body: bytes, *, path_model: str | None, path_stream: bool) -> Conversation:
        try:
            data = load_json(body)
            checked = validate_schema(data)
        except Invalid as error:
            raise self.error(400, error.message, rule=error.rule) from None
        neutral = _neutral(checked)
        try:
            check_final_turn(data)
            check_rules(checked)
        except Invalid as error:
            raise self.error(400, error.message, rule=error.rule, message_index=neutral.index_of(error)) from None
        return Conversation(
            model=checked.model,
            messages=neutral.messages,
            paths=neutral.paths,
            tools=checked.tools,
            tool_choice=checked.tool_choice,
            stream=checked.stream,
            raw=data,
        )

    def call_id(self, seed: str) -> str:
        return "toolu_01" + stable_token(seed, 22, BASE58)

    def reasoning_parts(
        self, seed: str, thought: str, conversation: Conversation, *, redacted: bool, acting: bool
    ) -> list[Reasoning]:
        return thinking_blocks(seed, thought, conversation, redacted=redacted)

    def check_reasoning(
        self, conversation: Conversation, index: int, expected: Sequence[Reasoning], *, last: bool
    ) -> None:
        check_echo(conversation, index, expected, error=self.error)

    def _message_id(self, turn: ModelTurn) -> str:
        return "msg_01" + stable_token(turn.response_seed, 22, BASE58)

    def _stop(self, turn: ModelTurn) -> str:
        return turn.raw_stop_reason or _WIRE_STOP[turn.stop_reason]

    def _stop_sequence(self, turn: ModelTurn, conversation: Conversation) -> str | None:
        """The matched sequence: we take the first one the request asked for."""
        if self._stop(turn) != "stop_sequence":
            return None
        sequences = conversation.raw.get("stop_sequences")
        return sequences[0] if isinstance(sequences, list) and sequences else None

    @staticmethod
    def _usage(turn: ModelTurn, output_tokens: int, *, full: bool = True) -> dict[str, Any]:
        """Usage as 2026 traffic has it (reference A.3, A.4 "Newer fields"): the body and
        `message_start` break `cache_creation` down and name the `service_tier`; `message_delta`
        carries the counts only."""
        usage: dict[str, Any] = {
            "input_tokens": turn.usage.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        if full:
            usage["cache_creation"] = {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0}
        usage["output_tokens"] = output_tokens
        if full:
            usage["service_tier"] = "standard"
        return usage

    def encode_response(self, turn: ModelTurn, conversation: Conversation) -> dict[str, Any]:
        return {
            "model": conversation.model,
            "id": self._message_id(turn),
            "type": "message",
            "role": "assistant",
            "content": _response_blocks(turn.message),
            "stop_reason": self._stop(turn),
            "stop_sequence": self._stop_sequence(turn, conversation),
            "usage": self._usage(turn, turn.usage.output_tokens),
        }

    def encode_stream(self, turn: ModelTurn, conversation: Conversation) -> list[bytes]:
        """The recorded order (reference A.4): a ping after the first block starts, each tool block
        opening with `input: {}` and an empty `input_json_delta`, arguments in many fragments."""
        message: dict[str, Any] = {
            "model": conversation.model,
            "id": self._message_id(turn),
            "type": "message",
            "role": "assistant",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": self._usage(turn, min(turn.usage.output_tokens, 1)),
        }
        frames = [self._frame("message_start", {"message": message})]
        for index, block in enumerate(_response_blocks(turn.message)):
            block_frames = self._block_frames(index, block)
            if index == 0:  # where C3 has it: right after the first block starts
                block_frames.insert(1, sse_frame(dumps({"type": "ping"}), event="ping"))
            frames += block_frames
        delta = {"stop_reason": self._stop(turn), "stop_sequence": self._stop_sequence(turn, conversation)}
        frames.append(
            self._frame(
                "message_delta", {"delta": delta, "usage": self._usage(turn, turn.usage.output_tokens, full=False)}
            )
        )
        frames.append(self._frame("message_stop", {}))
        return frames

    @staticmethod
    def _frame(name: str, payload: dict[str, Any]) -> bytes:
        return sse_frame(dumps({"type": name, **payload}), event=name)

    def _block_frames(self, index: int, block: dict[str, Any]) -> list[bytes]:
        if block["type"] == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in split_fragments(block["text"])]
        elif block["type"] in ("thinking", "redacted_thinking"):
            start = stream_start(block)
            deltas = stream_deltas(block, split_fragments(block.get("thinking", "")))
        else:
            start = {**block, "input": {}}
            arguments = dumps(block["input"]) if block["input"] else ""
            pieces = [""] + split_fragments(arguments)
            deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in pieces]
        frames = [self._frame("content_block_start", {"index": index, "content_block": start})]
        frames += [self._frame("content_block_delta", {"index": index, "delta": delta}) for delta in deltas]
        frames.append(self._frame("content_block_stop", {"index": index}))
        return frames

    def error(
        self,
        status: int,
        message: str,
        *,
        rule: Rule,
        param: str | None = None,
        code: str | None = None,
        message_index: int | None = None,
    ) -> WireError:
        """Anthropic's envelope has no `param` or `code`; both are accepted and dropped."""
        kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
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


WIRE = Anthropic()
