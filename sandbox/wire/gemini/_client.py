"""The skyl client's side of Gemini: the request it sends (no call ids: the client invents stable
ones for the skyl model and never sends them), and the response it reads, whole or streamed.
Touches only the neutral types, the client half of the wire contract and thought parts' client half
(`_reasoning`); the fake side borrows `encode_part` and `fake_part`, a part being the same object in
a request and a response.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..._exceptions import ProviderError
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
    stable_token,
)
from .._reasoning import check_provider
from .._sse import SSEEvent
from ._reasoning import encode_parts, reasoning_events, wire_reasoning

__all__ = ["GeminiStream", "decode_response", "encode_part", "encode_request", "fake_part"]

_REFUSALS = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII"}
_SYNTHETIC = "gcall_"
"""Prefix of the ids the client invents; they exist only on the skyl side of the wire."""


def encode_request(request: Request, *, stream: bool, api_key: str | None) -> EncodedRequest:
    model = request.model.removeprefix("models/")
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    body: dict[str, Any] = {"contents": _encode_contents(request.messages)}
    system = [request.system] if request.system else []
    system += [message.text() for message in request.messages if message.role == "system"]
    if system:
        body["systemInstruction"] = {"parts": [{"text": text} for text in system]}
    if request.tools:
        body["tools"] = [{"functionDeclarations": [_declaration(tool) for tool in request.tools]}]
    if request.tool_choice is not None:
        body["toolConfig"] = {"functionCallingConfig": _calling_config(request.tool_choice)}
    config: dict[str, Any] = {"maxOutputTokens": request.max_tokens}
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if request.stop_sequences:
        config["stopSequences"] = list(request.stop_sequences)
    if request.reasoning:
        config["thinkingConfig"] = {"includeThoughts": True}  # thought summaries; Gemini 3 thinks either way
    body["generationConfig"] = config
    headers = {"x-goog-api-key": api_key} if api_key else {}
    return EncodedRequest(path=f"/v1beta/models/{model}:{method}", json=body, headers=headers)


def decode_response(data: Any) -> Response:
    body = _object(data, "the response body")
    usage, model, response_id = _envelope(body)
    candidate = _first_candidate(body)
    if candidate is None:
        return Response(_EMPTY, _blocked_reason(body), usage, model, response_id, raw=data)
    parts = _read_parts(candidate, "candidates[0]", _CallIds(response_id))
    message = Message("assistant", parts)
    stop = _stop_reason(candidate.get("finishReason"), bool(message.tool_calls()))
    return Response(message, stop, usage, model, response_id, raw=data)


# -- client side: encoding -----------------------------------------------------------------------------


def _encode_contents(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Neutral messages as `contents`. Consecutive tool messages merge into ONE user content, in the
    order the learner appended them: Gemini pairs a turn's responses with its calls by count."""
    contents: list[dict[str, Any]] = []
    responses: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message.role == "system":
            continue  # folded into systemInstruction
        if message.role == "tool":
            responses.extend(_response_part(result, messages[:index]) for result in message.tool_results())
            continue
        if responses:
            contents.append({"role": "user", "parts": responses})
            responses = []
        role = "model" if message.role == "assistant" else "user"
        check_provider(message, "gemini")
        parts = encode_parts(message.content, _client_part)
        contents.append({"role": role, "parts": parts})
    if responses:
        contents.append({"role": "user", "parts": responses})
    return contents


def _client_part(part: Part) -> dict[str, Any] | None:
    return encode_part(part, with_id=True) if _on_wire(part) else None


def fake_part(part: Part) -> dict[str, Any] | None:
    return encode_part(part) if _on_wire(part) else None


def _on_wire(part: Part) -> bool:
    """Empty text is an unset part to Gemini (a 400), and results travel in their own turn."""
    return isinstance(part, ToolCall) or (isinstance(part, Text) and part.text != "")


def encode_part(part: Part, *, with_id: bool = False) -> dict[str, Any]:
    """A text or functionCall part. Only the client sends an id, and only one the provider gave:
    real responses carry none, so the fake never does."""
    if isinstance(part, ToolCall):
        call: dict[str, Any] = {"name": part.name, "args": _plain(part.arguments)}
        if with_id and _provider_id(part.id):
            call = {"id": part.id, **call}
        return {"functionCall": call}  # a thought signature travels as the Reasoning part before it
    assert isinstance(part, Text)
    return {"text": part.text}


def _response_part(result: ToolResult, earlier: Sequence[Message]) -> dict[str, Any]:
    """A functionResponse. Its `name` comes from the nearest assistant turn that made the call; if
    none did (the learner dropped that turn), the id stands in, so the request still reaches the
    turn-order check and gets the real ordering error rather than "Name cannot be empty"."""
    name = next(
        (
            call.name
            for message in reversed(earlier)
            if message.role == "assistant"
            for call in message.tool_calls()
            if call.id == result.call_id
        ),
        result.call_id or "unknown_function",
    )
    response: dict[str, Any] = {
        "name": name,
        "response": {"error" if result.is_error else "result": result.content},
    }
    if _provider_id(result.call_id):
        response = {"id": result.call_id, **response}
    return {"functionResponse": response}


def _provider_id(call_id: str) -> bool:
    return bool(call_id) and not call_id.startswith(_SYNTHETIC)


def _declaration(tool: Tool) -> dict[str, Any]:
    # parametersJsonSchema takes full JSON Schema; `parameters` rejects keys such as additionalProperties.
    declaration: dict[str, Any] = {"name": tool.name}
    if tool.description:
        declaration["description"] = tool.description
    declaration["parametersJsonSchema"] = _plain(tool.parameters)
    return declaration


def _calling_config(choice: str) -> dict[str, Any]:
    if choice in ("auto", "none"):
        return {"mode": choice.upper()}
    if choice == "required":
        return {"mode": "ANY"}
    return {"mode": "ANY", "allowedFunctionNames": [choice]}


def _plain(value: Any) -> Any:
    """Mappings and tuples as JSON-ready dicts and lists."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


# -- client side: decoding -----------------------------------------------------------------------------

_EMPTY = Message("assistant", ())


def _malformed(what: str) -> ProviderError:
    return ProviderError(
        f"gemini sent a response that is not the documented shape: {what}", status=200, provider="gemini"
    )


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _malformed(f"{where} is {type(value).__name__}, expected an object")
    return value


def _optional(body: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = body.get(key)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool) and kind is int):
        raise _malformed(f"{where}.{key} is {type(value).__name__}: {value!r:.80}")
    return value


def _envelope(body: Mapping[str, Any]) -> tuple[Usage, str, str]:
    metadata = _optional(body, "usageMetadata", dict, "response") or {}
    counts = [_optional(metadata, key, int, "usageMetadata") or 0 for key in _USAGE_KEYS]
    model = _optional(body, "modelVersion", str, "response") or ""
    response_id = _optional(body, "responseId", str, "response") or ""
    # Thinking tokens are billed as output.
    return Usage(input_tokens=counts[0], output_tokens=counts[1] + counts[2]), model, response_id


_USAGE_KEYS = ("promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount")


def _first_candidate(body: Mapping[str, Any]) -> dict[str, Any] | None:
    candidates = _optional(body, "candidates", list, "response") or []
    return _object(candidates[0], "candidates[0]") if candidates else None


def _blocked_reason(body: Mapping[str, Any]) -> StopReason:
    """No candidate at all: the prompt itself was blocked (promptFeedback) or the body is wrong."""
    feedback = _optional(body, "promptFeedback", dict, "response") or {}
    if feedback.get("blockReason"):
        return StopReason.REFUSAL
    raise _malformed("no candidates and no promptFeedback.blockReason")


class _CallIds:
    """Stable ids for calls that arrive without one: the same response always gets the same ids,
    streamed or not, because they derive from its responseId (or, lacking one, its first call)."""

    def __init__(self, response_id: str) -> None:
        self._seed = response_id
        self._count = 0

    def next(self, call_id: str | None, name: str, args: Mapping[str, Any]) -> str:
        if not self._seed:
            self._seed = json.dumps({"name": name, "args": args}, sort_keys=True, separators=(",", ":"))
        index, self._count = self._count, self._count + 1
        return call_id or f"{_SYNTHETIC}{stable_token(self._seed, 8)}_{index}"


def _read_parts(candidate: Mapping[str, Any], where: str, ids: _CallIds) -> list[Part]:
    content = _optional(candidate, "content", dict, where) or {}
    parts: list[Part] = []
    for number, raw in enumerate(_optional(content, "parts", list, f"{where}.content") or []):
        path = f"{where}.content.parts[{number}]"
        part = _object(raw, path)
        _optional(part, "thoughtSignature", str, path)
        reasoning = wire_reasoning(part)
        if reasoning is not None:
            parts.append(reasoning)  # before the part that carried it, as encode_parts puts it back
        call = _optional(part, "functionCall", dict, path)
        if call is not None:
            parts.append(_read_call(call, part, f"{path}.functionCall", ids))
            continue
        text = _optional(part, "text", str, path)
        if text and not part.get("thought"):  # thought summaries are not the answer
            parts.append(Text(text))
    return parts


def _read_call(call: Mapping[str, Any], part: Mapping[str, Any], where: str, ids: _CallIds) -> ToolCall:
    name = _optional(call, "name", str, where)
    if not name:
        raise _malformed(f"{where} has no name")
    args = call.get("args")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ProviderError(
            f"gemini sent call {name!r} with arguments that are not a JSON object: {args!r:.80}",
            status=200, provider="gemini",
        )  # fmt: skip
    call_id = _optional(call, "id", str, where)
    return ToolCall(ids.next(call_id, name, args), name, args)


def _stop_reason(finish: Any, has_calls: bool) -> StopReason:
    if has_calls:
        return StopReason.TOOL_USE  # whatever finishReason says: Gemini reports STOP for calls
    if finish == "STOP":
        return StopReason.END_TURN
    if finish == "MAX_TOKENS":
        return StopReason.MAX_TOKENS
    if finish in _REFUSALS:
        return StopReason.REFUSAL
    return StopReason.OTHER


class GeminiStream(StreamDecoder):
    """Each SSE event is a whole GenerateContentResponse holding only the new parts; the chunk with
    `finishReason` (or a blocked prompt) ends the turn."""

    def __init__(self) -> None:
        self._ids: _CallIds | None = None
        self._calls = 0
        self._thoughts = 0
        self._ended = False

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        if self._ended:
            raise _malformed("the stream went on after its final chunk (the one with finishReason)")
        try:
            data = json.loads(event.data)
        except (ValueError, RecursionError):
            raise _malformed(f"a stream chunk is not JSON: {event.data!r:.80}") from None
        body = _object(data, "a stream chunk")
        if "error" in body:
            raise _stream_error(body)
        usage, model, response_id = _envelope(body)
        if self._ids is None:
            self._ids = _CallIds(response_id)
        candidate = _first_candidate(body)
        if candidate is None:
            if (_optional(body, "promptFeedback", dict, "chunk") or {}).get("blockReason"):
                self._ended = True
                return [MessageEnd(StopReason.REFUSAL, usage, model, response_id)]
            return []
        events: list[StreamEvent] = []
        for part in _read_parts(candidate, "candidates[0]", self._ids):
            if isinstance(part, Text):
                events.append(TextDelta(part.text))
                continue
            if isinstance(part, Reasoning):
                events += reasoning_events(self._thoughts, part)
                self._thoughts += 1
                continue
            assert isinstance(part, ToolCall)
            index, self._calls = self._calls, self._calls + 1
            arguments = json.dumps(part.arguments, separators=(",", ":"), ensure_ascii=False)
            events += [
                ToolCallStart(index, part.id, part.name, meta=part.meta),
                ToolCallDelta(index, arguments),
                ToolCallEnd(index),
            ]
        finish = candidate.get("finishReason")
        if finish is not None:
            self._ended = True
            events.append(MessageEnd(_stop_reason(finish, self._calls > 0), usage, model, response_id))
        return events

    def finish(self) -> list[StreamEvent]:
        if not self._ended:
            raise _malformed("the stream ended before a chunk with finishReason")
        return []


def _stream_error(body: Mapping[str, Any]) -> ProviderError:
    error = body.get("error")
    error = error if isinstance(error, dict) else {}
    code, status, message = error.get("code"), error.get("status"), error.get("message")
    return ProviderError(
        message if isinstance(message, str) else f"gemini stream error: {error!r:.200}",
        status=code if isinstance(code, int) and not isinstance(code, bool) else 500,
        provider="gemini",
        error_type=status if isinstance(status, str) else "",
        body=dict(body),
    )
