"""The skyl client's side of the Responses API: the request it sends (a flat list of items), and the
response it reads, whole or streamed. Touches only the neutral types and the client half of the wire
contract, and the reasoning items' client half (`_reasoning`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..._exceptions import ProviderError, UsageError
from ...messages._events import MessageEnd, StreamEvent, TextDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from ...messages._types import (
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
from .._base import (
    EncodedRequest,
    StreamDecoder,
)
from .._reasoning import check_provider
from .._sse import SSEEvent, dumps
from ._reasoning import ReasoningStream, decode_item

__all__ = ["PROVIDER", "ResponsesStreamDecoder", "decode_response", "encode_request"]

PROVIDER = "openai-responses"
_STATUSES = ("completed", "failed", "in_progress", "cancelled", "queued", "incomplete")
_TERMINAL_EVENTS = {"incomplete": "response.incomplete", "failed": "response.failed"}
_STANDARD_CHOICES = ("auto", "none", "required")


def encode_request(request: Request, *, stream: bool, api_key: str | None) -> EncodedRequest:
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


def decode_response(data: Any) -> Response:
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


# -- client side: encoding -----------------------------------------------------------------------


def _encode_message(message: Message) -> Iterator[dict[str, Any]]:
    """One item per run of text, one per call, one per result, one per reasoning item, in the message's order."""
    check_provider(message, PROVIDER)
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
    return ProviderError(f"{PROVIDER} sent {what}", status=200, provider=PROVIDER)


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
        provider=PROVIDER,
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


class ResponsesStreamDecoder(StreamDecoder):
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
                provider=PROVIDER,
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
