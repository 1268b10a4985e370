"""The OpenAI Responses API (`POST /v1/responses`), on both sides of the wire.

Shapes: shared/reference/wire-openai.md section 3, checked against the openai 3.57 SDK types.
The Responses API has no messages, only a flat list of items: an assistant turn is a `message`
item (its prose) plus one `function_call` item per call, and each result is a
`function_call_output` item paired with its call by `call_id`, not by position. The neutral model
folds the assistant items that follow each other back into one assistant message.
The fake side's request checks live in `openai_responses_validate.py`; reasoning items and their
echo rules in `openai_responses_reasoning.py`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._events import MessageEnd, StreamEvent, TextDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from .._exceptions import ProviderError, UsageError
from .._types import (
    Message,
    Part,
    Reasoning,
    Request,
    Response,
    StopReason,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
)
from ._base import (
    CREATED_AT,
    HEX,
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
from ._openai import openai_request_headers
from ._reasoning import check_provider
from ._sse import SSEEvent, dumps, sse_frame
from .openai_responses_reasoning import ReasoningStream, check_echo, decode_item, reasoning_item, stream_item
from .openai_responses_validate import parse_request, wire_error

__all__ = ["WIRE", "OpenAIResponses"]

_PROVIDER = "openai-responses"
_STATUSES = ("completed", "failed", "in_progress", "cancelled", "queued", "incomplete")
_TERMINAL_EVENTS = {"incomplete": "response.incomplete", "failed": "response.failed"}
_STANDARD_CHOICES = ("auto", "none", "required")


class OpenAIResponses(WireFormat):
    """`provider="openai-responses"`: OpenAI's Responses API."""

    name = _PROVIDER
    base_url = "https://api.openai.com/v1"
    stream_media_type = "text/event-stream; charset=utf-8"

    def request_headers(self, request_digest: str) -> dict[str, str]:
        return openai_request_headers(request_digest)

    # -- client side -------------------------------------------------------------------------

    def encode_request(self, request: Request, *, stream: bool, api_key: str | None) -> EncodedRequest:
        if request.stop_sequences:
            raise UsageError(
                f"The OpenAI Responses API has no stop sequences, so stop_sequences="
                f"{tuple(request.stop_sequences)!r} cannot be sent with provider='openai-responses'.\n"
                "- remove stop_sequences from the Request, or\n"
                "- use provider='openai' (Chat Completions), 'anthropic' or 'gemini', which accept them."
            )
        body: dict[str, Any] = {"model": request.model}
        if request.system is not None:
            body["instructions"] = request.system
        body["input"] = [item for message in request.messages for item in _encode_message(message)]
        if request.tools:
            body["tools"] = [_encode_tool(tool) for tool in request.tools]
        if request.tool_choice is not None:
            choice = request.tool_choice
            body["tool_choice"] = choice if choice in _STANDARD_CHOICES else {"type": "function", "name": choice}
        body["max_output_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.reasoning:
            body["reasoning"] = {"summary": "auto"}
        if stream:
            body["stream"] = True
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        return EncodedRequest(path="/responses", json=body, headers=headers)

    def decode_response(self, data: Any) -> Response:
        response = _as_object(data, "a response")
        _check_failed(response)
        message, refusal = _decode_output(_field(response, "output", list, "the response"))
        return Response(
            message=message,
            stop_reason=_stop_reason(bool(message.tool_calls()), response, refusal),
            usage=_decode_usage(response),
            model=_field(response, "model", str, "the response"),
            id=_field(response, "id", str, "the response"),
            raw=data,
        )

    def stream_decoder(self) -> StreamDecoder:
        return _ResponsesStreamDecoder()

    # -- fake side -----------------------------------------------------------------------------

    def parse_request(self, body: bytes, *, path_model: str | None, path_stream: bool) -> Conversation:
        return parse_request(body)

    def call_id(self, seed: str) -> str:
        return "call_" + stable_token(seed, 24)

    def encode_response(self, turn: ModelTurn, conversation: Conversation) -> dict[str, Any]:
        status, incomplete = _status(turn)
        usage = turn.usage
        return _response_object(
            turn,
            conversation,
            status=status,
            incomplete=incomplete,
            output=_output_items(turn),
            usage={
                "input_tokens": usage.input_tokens,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": usage.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage.total_tokens,
            },
        )

    def reasoning_parts(
        self, seed: str, thought: str, conversation: Conversation, *, redacted: bool, acting: bool
    ) -> list[Reasoning]:
        return [reasoning_item(seed, thought, conversation)]

    def check_reasoning(
        self, conversation: Conversation, index: int, expected: Sequence[Reasoning], *, last: bool
    ) -> None:
        check_echo(conversation, index, expected)

    def encode_stream(self, turn: ModelTurn, conversation: Conversation) -> list[bytes]:
        """created, in_progress, each item's events, then the terminal event holding the full response."""
        final = self.encode_response(turn, conversation)
        pending = {**final, "status": "in_progress", "incomplete_details": None, "output": [], "usage": None}
        writer = _StreamWriter()
        writer.emit("response.created", response=pending)
        writer.emit("response.in_progress", response=pending)
        for index, item in enumerate(final["output"]):
            if item["type"] == "function_call":
                _stream_call(writer, index, item)
            elif item["type"] == "reasoning":
                stream_item(writer.emit, index, item)
            else:
                _stream_message(writer, index, item)
        writer.emit(_TERMINAL_EVENTS.get(final["status"], "response.completed"), response=final)
        return writer.frames

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
        return wire_error(status, message, rule=rule, param=param, code=code, message_index=message_index)


WIRE = OpenAIResponses()


# -- client side: encoding -----------------------------------------------------------------------


def _encode_message(message: Message) -> Iterator[dict[str, Any]]:
    """One item per run of text, one per call, one per result, one per reasoning item, in the message's order."""
    check_provider(message, _PROVIDER)
    texts: list[str] = []
    for part in message.content:
        if isinstance(part, Text):
            texts.append(part.text)
            continue
        if texts:
            yield _text_item(message.role, texts)
            texts = []
        if isinstance(part, Reasoning):
            yield part.data()  # exactly as the API sent it: id, summary, encrypted_content
        else:
            yield _call_item(part) if isinstance(part, ToolCall) else _result_item(part)
    if texts:
        yield _text_item(message.role, texts)


def _text_item(role: str, texts: list[str]) -> dict[str, Any]:
    if role == "assistant":
        content = [{"type": "output_text", "text": text} for text in texts]
        return {"type": "message", "role": "assistant", "content": content}
    if len(texts) == 1:
        return {"role": role, "content": texts[0]}
    return {"role": role, "content": [{"type": "input_text", "text": text} for text in texts]}


def _call_item(call: ToolCall) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "function_call"}
    if isinstance(call.meta.get("item_id"), str):
        item["id"] = call.meta["item_id"]  # the API pairs by call_id; the item id is only replayed
    item.update(call_id=call.id, name=call.name, arguments=dumps(dict(call.arguments)))
    return item


def _result_item(result: ToolResult) -> dict[str, Any]:
    # The Responses API has no error flag on a result: is_error lives only in the content's wording.
    return {"type": "function_call_output", "call_id": result.call_id, "output": result.content}


def _encode_tool(tool: Tool) -> dict[str, Any]:
    encoded: dict[str, Any] = {"type": "function", "name": tool.name}
    if tool.description:
        encoded["description"] = tool.description
    # The Responses API makes function tools strict unless told otherwise, and strict mode rejects
    # most hand-written schemas; a neutral Tool carries no strictness, so ask for none.
    encoded.update(parameters=dict(tool.parameters), strict=False)
    return encoded


# -- client side: decoding ------------------------------------------------------------------------


def _malformed(what: str) -> ProviderError:
    return ProviderError(f"{_PROVIDER} sent {what}", status=200, provider=_PROVIDER)


def _as_object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _malformed(f"{what} that is not a JSON object (got {type(value).__name__}).")
    return value


def _field(obj: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        got = "nothing" if key not in obj else type(value).__name__
        raise _malformed(f"{where} with no {kind.__name__} {key!r} (got {got}).")
    return value


def _check_failed(response: Mapping[str, Any]) -> None:
    if response.get("status") != "failed":
        return
    error = response.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    raise ProviderError(
        message if isinstance(message, str) else "The response failed without an error message.",
        status=200,
        provider=_PROVIDER,
        error_type=code if isinstance(code, str) else "",
        body=response,
    )


def _decode_output(output: list[Any]) -> tuple[Message, bool]:
    """The assistant turn from `output`, and whether it held a refusal."""
    parts: list[Part] = []
    refusal = False
    for index, raw in enumerate(output):
        where = f"output[{index}]"
        item = _as_object(raw, where)
        kind = item.get("type")
        if kind == "function_call":
            parts.append(_decode_call(item, where))
        elif kind == "reasoning":
            parts.append(decode_item(item))
        elif kind == "message":
            for j, content in enumerate(_field(item, "content", list, where)):
                piece = _as_object(content, f"{where}.content[{j}]")
                if piece.get("type") == "refusal":
                    refusal = True
                    parts.append(Text(_field(piece, "refusal", str, f"{where}.content[{j}]")))
                elif piece.get("type") == "output_text":
                    parts.append(Text(_field(piece, "text", str, f"{where}.content[{j}]")))
        # Hosted-tool items carry neither prose nor a call for the loop to run.
    return Message("assistant", parts), refusal


def _decode_call(item: Mapping[str, Any], where: str) -> ToolCall:
    call_id = _field(item, "call_id", str, where)
    name = _field(item, "name", str, where)
    text = _field(item, "arguments", str, where)
    arguments = _decode_arguments(text, f"call {call_id} ({name})")
    meta = {"item_id": item["id"]} if isinstance(item.get("id"), str) else {}
    return ToolCall(call_id, name, arguments, meta=meta)


def _decode_arguments(text: str, which: str) -> dict[str, Any]:
    try:
        arguments = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _malformed(f"arguments for {which} that are not valid JSON ({exc}): {text!r}") from None
    if not isinstance(arguments, dict):
        raise _malformed(f"arguments for {which} that are not a JSON object: {text!r}")
    return arguments


def _stop_reason(has_calls: bool, response: Mapping[str, Any], refusal: bool) -> StopReason:
    """The Responses API has no finish_reason: the items and the status tell."""
    details = response.get("incomplete_details")
    # A truncated response says so even when it holds calls, as Anthropic's max_tokens does: the call
    # list, not this, tells the loop whether to go on.
    if response.get("status") == "incomplete" and isinstance(details, dict):
        if details.get("reason") == "max_output_tokens":
            return StopReason.MAX_TOKENS
    if has_calls:
        return StopReason.TOOL_USE
    return StopReason.REFUSAL if refusal else StopReason.END_TURN


def _decode_usage(response: Mapping[str, Any]) -> Usage:
    usage = response.get("usage")
    if usage is None:
        return Usage()
    usage = _as_object(usage, "a 'usage'")
    return Usage(_field(usage, "input_tokens", int, "usage"), _field(usage, "output_tokens", int, "usage"))


@dataclass
class _OpenCall:
    index: int
    fragments: int = 0


class _ResponsesStreamDecoder(StreamDecoder):
    """Reads events by their JSON `type` (as the SDK does), keyed by `output_index`."""

    def __init__(self) -> None:
        self._calls: dict[int, _OpenCall] = {}
        self._reasoning = ReasoningStream()
        self._refusal = False
        self._ended = False
        self._last = "nothing"

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        try:
            data = json.loads(event.data)
        except (ValueError, RecursionError):
            raise _malformed(f"a stream event whose data is not JSON: {event.data[:200]!r}") from None
        data = _as_object(data, "a stream event")
        kind = _field(data, "type", str, "a stream event")
        self._last = kind
        if kind == "error":
            message, code = data.get("message"), data.get("code")
            raise ProviderError(
                message if isinstance(message, str) else "The stream sent an error event.",
                status=200,
                provider=_PROVIDER,
                error_type=code if isinstance(code, str) else "",
                body=data,
            )
        if not kind.startswith("response."):
            raise _malformed(f"an unknown stream event type {kind!r}: is this a Responses API stream?")
        return self._handle(kind, data)

    def _handle(self, kind: str, data: dict[str, Any]) -> list[StreamEvent]:
        where = kind
        if kind == "response.output_item.added":
            item = _as_object(data.get("item"), f"{where} with an item")
            if item.get("type") == "reasoning":
                return self._reasoning.added(_field(data, "output_index", int, where))
            if item.get("type") != "function_call":
                return []
            output_index = _field(data, "output_index", int, where)
            call = self._calls[output_index] = _OpenCall(len(self._calls))
            item_id = item.get("id")
            start: list[StreamEvent] = [
                ToolCallStart(
                    call.index,
                    _field(item, "call_id", str, where),
                    _field(item, "name", str, where),
                    meta={"item_id": item_id} if isinstance(item_id, str) else {},
                )
            ]
            return start + self._fragment(call, item.get("arguments"))
        if kind == "response.function_call_arguments.delta":
            return self._fragment(self._call(data, where), _field(data, "delta", str, where))
        if kind == "response.reasoning_summary_text.delta":
            return self._reasoning.delta(data)
        if kind == "response.output_item.done":
            item = _as_object(data.get("item"), f"{where} with an item")
            if item.get("type") == "reasoning":
                return self._reasoning.done(_field(data, "output_index", int, where), item)
            if item.get("type") != "function_call":
                return []
            call = self._call(data, where)
            # A stream that sent no fragments still owes the loop the arguments the item carries.
            late = self._fragment(call, item.get("arguments")) if call.fragments == 0 else []
            return [*late, ToolCallEnd(call.index)]
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            self._refusal = self._refusal or kind == "response.refusal.delta"
            delta = _field(data, "delta", str, where)
            return [TextDelta(delta)] if delta else []
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            return self._end(_as_object(data.get("response"), f"{where} with a response"))
        return []  # created, in_progress, content_part.*, *.done: nothing new for the loop

    def _call(self, data: Mapping[str, Any], where: str) -> _OpenCall:
        output_index = _field(data, "output_index", int, where)
        call = self._calls.get(output_index)
        if call is None:
            raise _malformed(f"{where} for output_index {output_index} before its function_call item was added.")
        return call

    @staticmethod
    def _fragment(call: _OpenCall, text: Any) -> list[StreamEvent]:
        if not isinstance(text, str) or not text:
            return []
        call.fragments += 1
        return [ToolCallDelta(call.index, text)]

    def _end(self, response: dict[str, Any]) -> list[StreamEvent]:
        _check_failed(response)
        self._ended = True
        output = response.get("output")
        refusal = self._refusal or (isinstance(output, list) and _decode_output(output)[1])
        return [
            MessageEnd(
                stop_reason=_stop_reason(bool(self._calls), response, refusal),
                usage=_decode_usage(response),
                model=_field(response, "model", str, "the final response"),
                id=_field(response, "id", str, "the final response"),
            )
        ]

    def finish(self) -> list[StreamEvent]:
        if not self._ended:
            raise _malformed(f"a stream that ended before response.completed (last event: {self._last}).")
        return []


# -- fake side --------------------------------------------------------------------------------------


def _status(turn: ModelTurn) -> tuple[str, dict[str, str] | None]:
    """`status` and `incomplete_details`; a raw stop reason is a status, or else an incomplete reason."""
    raw = turn.raw_stop_reason
    if raw is not None and raw != "incomplete":
        return (raw, None) if raw in _STATUSES else ("incomplete", {"reason": raw})
    if raw == "incomplete" or turn.stop_reason is StopReason.MAX_TOKENS:
        return "incomplete", {"reason": "max_output_tokens"}
    return "completed", None


def _item_id(prefix: str, seed: str, what: str) -> str:
    return f"{prefix}_" + stable_token(f"{seed}:{what}", 48, HEX)


def _output_items(turn: ModelTurn) -> list[dict[str, Any]]:
    """One message item per run of text (refusal parts for a REFUSAL turn), one item per call."""
    items: list[dict[str, Any]] = []
    texts: list[str] = []
    refusal = turn.stop_reason is StopReason.REFUSAL

    def flush() -> None:
        if texts:
            content = [_refusal_part(text) if refusal else _text_part(text) for text in texts]
            items.append(
                {
                    "id": _item_id("msg", turn.seed, f"message:{len(items)}"),
                    "type": "message",
                    "status": "completed",
                    "content": content,
                    "role": "assistant",
                }
            )
            texts.clear()

    for part in turn.message.content:
        if isinstance(part, Text):
            texts.append(part.text)
        elif isinstance(part, Reasoning):
            flush()
            items.append(part.data())
        elif isinstance(part, ToolCall):
            flush()
            item_id = part.meta.get("item_id")
            items.append(
                {
                    "id": item_id if isinstance(item_id, str) else _item_id("fc", turn.seed, f"call:{len(items)}"),
                    "type": "function_call",
                    "status": "completed",
                    "arguments": dumps(dict(part.arguments)),
                    "call_id": part.id,
                    "name": part.name,
                }
            )
    flush()
    return items


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}


def _refusal_part(text: str) -> dict[str, Any]:
    return {"type": "refusal", "refusal": text}


def _echo(raw: Mapping[str, Any], key: str, default: Any) -> Any:
    value = raw.get(key)
    return default if value is None else value


def _echo_tools(conversation: Conversation) -> list[dict[str, Any]]:
    """The request's function tools, with the fields the API fills in (strict defaults to true)."""
    sent = conversation.raw.get("tools")
    strict = {
        tool.get("name"): tool.get("strict")
        for tool in (sent if isinstance(sent, list) else [])
        if isinstance(tool, dict) and isinstance(tool.get("strict"), bool)
    }
    return [
        {
            "type": "function",
            "description": tool.description or None,
            "name": tool.name,
            "parameters": dict(tool.parameters),
            "strict": strict.get(tool.name, True),
        }
        for tool in conversation.tools
    ]


def _response_object(
    turn: ModelTurn,
    conversation: Conversation,
    *,
    status: str,
    incomplete: dict[str, str] | None,
    output: list[dict[str, Any]],
    usage: dict[str, Any],
) -> dict[str, Any]:
    """The full response object, fields in the order the recorded responses use."""
    raw = conversation.raw
    return {
        "id": _item_id("resp", turn.response_seed, "response"),
        "object": "response",
        "created_at": CREATED_AT,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": incomplete,
        "instructions": raw.get("instructions"),
        "max_output_tokens": raw.get("max_output_tokens"),
        "model": conversation.model,
        "output": output,
        "parallel_tool_calls": _echo(raw, "parallel_tool_calls", True),
        "previous_response_id": raw.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": _echo(raw, "store", True),
        "temperature": _echo(raw, "temperature", 1.0),
        "text": {"format": {"type": "text"}},
        "tool_choice": _echo(raw, "tool_choice", "auto"),
        "tools": _echo_tools(conversation),
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }


class _StreamWriter:
    """Numbers events from 0 and frames them as `event:` + `data:` pairs."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def emit(self, kind: str, **fields: Any) -> None:
        event = {"type": kind, "sequence_number": len(self.frames), **fields}
        self.frames.append(sse_frame(dumps(event), event=kind))


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
            writer.emit("response.content_part.added", **ids, part=_refusal_part(""))
            for fragment in split_fragments(part["refusal"]):
                writer.emit("response.refusal.delta", **ids, delta=fragment)
            writer.emit("response.refusal.done", **ids, refusal=part["refusal"])
        else:
            writer.emit("response.content_part.added", **ids, part=_text_part(""))
            for fragment in split_fragments(part["text"]):
                writer.emit("response.output_text.delta", **ids, delta=fragment, logprobs=[])
            writer.emit("response.output_text.done", **ids, text=part["text"], logprobs=[])
        writer.emit("response.content_part.done", **ids, part=part)
    writer.emit("response.output_item.done", output_index=index, item=item)
