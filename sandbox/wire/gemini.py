"""Gemini `generateContent`: both sides of the wire.

Gemini differs from the other three formats in one way that shapes everything here: real traffic
carries no call ids. A model turn's `functionCall` parts are answered by one user turn holding the
same number of `functionResponse` parts, paired by position. So:

- the client invents stable ids (`gcall_<token>_<k>`) for the skyl model and never sends them back;
- the fake numbers calls by position (`gemini:<content>:<k>`) and gives each response the id of the
  call at its position in the turn before (see `_pair` for responses whose name says otherwise).

Request validation lives in `gemini_validate.py`; thought signatures and their echo rule in
`gemini_reasoning.py`; this module maps between the wire and skyl types.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from .._events import MessageEnd, StreamEvent, TextDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from .._exceptions import ProviderError
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
from ._sse import SSEEvent, dumps, sse_frame
from .gemini_reasoning import check_echo, encode_parts, is_thought, reasoning_events, reasoning_parts, wire_reasoning
from .gemini_validate import (
    ParsedRequest,
    Rejection,
    WireContent,
    WirePart,
    check_fields,
    check_order,
    merge_model_runs,
    read_request,
)

__all__ = ["WIRE", "Gemini"]

_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_SYNTHETIC = "gcall_"
"""Prefix of the ids the client invents; they exist only on the skyl side of the wire."""
_CALLS_MESSAGE = "Model generated function call(s)."
_REFUSALS = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII"}
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
    409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL", 501: "UNIMPLEMENTED",
    503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}  # fmt: skip
_GOOGLE_STATUSES = {*_STATUS_NAMES.values(), "UNKNOWN", "FAILED_PRECONDITION", "OUT_OF_RANGE", "ALREADY_EXISTS"}
_BAD_REQUEST = "type.googleapis.com/google.rpc.BadRequest"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


class Gemini(WireFormat):
    name = "gemini"
    base_url = "https://generativelanguage.googleapis.com"
    media_type = "application/json; charset=UTF-8"  # reference B.7, like its error bodies
    has_call_ids = False
    error_kind_key = "status"

    # -- client side ---------------------------------------------------------------------------

    def encode_request(self, request: Request, *, stream: bool, api_key: str | None) -> EncodedRequest:
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

    def decode_response(self, data: Any) -> Response:
        body = _object(data, "the response body")
        usage, model, response_id = _envelope(body)
        candidate = _first_candidate(body)
        if candidate is None:
            return Response(_EMPTY, _blocked_reason(body), usage, model, response_id, raw=data)
        parts = _read_parts(candidate, "candidates[0]", _CallIds(response_id))
        message = Message("assistant", parts)
        stop = _stop_reason(candidate.get("finishReason"), bool(message.tool_calls()))
        return Response(message, stop, usage, model, response_id, raw=data)

    def stream_decoder(self) -> StreamDecoder:
        return _GeminiStream()

    # -- fake side -----------------------------------------------------------------------------

    def parse_request(self, body: bytes, *, path_model: str | None, path_stream: bool) -> Conversation:
        try:
            parsed = read_request(body)
        except Rejection as rejection:
            raise self._reject(rejection, []) from None
        turns, starts = merge_model_runs(parsed.contents)
        messages, paths, first = _to_neutral(parsed, turns, starts)
        try:
            check_fields(parsed)
        except Rejection as rejection:
            raise self._reject(rejection, first) from None
        try:
            check_order(turns)
        except Rejection as rejection:
            if rejection.content is not None:
                rejection.content = starts[rejection.content]  # the turn's first content on the wire
            raise self._reject(rejection, first) from None
        return Conversation(
            model=path_model or parsed.model or "",
            messages=messages,
            paths=paths,
            tools=parsed.tools,
            tool_choice=parsed.tool_choice,
            stream=path_stream,
            raw=parsed.raw,
        )

    def _reject(self, rejection: Rejection, first: list[int]) -> WireError:
        """`first[i]` is the neutral index of `contents[i]`'s first message (the transcript marks it)."""
        index = rejection.content
        neutral = first[index] if index is not None and index < len(first) else None
        return self.error(400, rejection.message, rule=rejection.rule, param=rejection.field, message_index=neutral)

    def call_id(self, seed: str) -> str:
        """Gemini has no call ids: this placeholder names a scripted call inside the sandbox only."""
        return f"gemini-call-{stable_token(seed, 12)}"

    def reasoning_parts(
        self, seed: str, thought: str, conversation: Conversation, *, redacted: bool, acting: bool
    ) -> list[Reasoning]:
        return reasoning_parts(seed, thought, conversation, acting=acting)

    def check_reasoning(
        self, conversation: Conversation, index: int, expected: Sequence[Reasoning], *, last: bool
    ) -> None:
        check_echo(conversation, index, expected, error=self.error)

    def encode_response(self, turn: ModelTurn, conversation: Conversation) -> dict[str, Any]:
        parts = encode_parts(turn.message.content, _fake_part)
        content: dict[str, Any] = {"parts": parts, "role": "model"} if parts else {"role": "model"}
        candidate = {"content": content, **_finish(turn), "index": 0}
        return {"candidates": [candidate], **_response_fields(turn, conversation)}

    def encode_stream(self, turn: ModelTurn, conversation: Conversation) -> list[bytes]:
        """One complete response per chunk: text in small fragments, then every call whole in the
        final chunk (Gemini neither splits arguments nor spreads parallel calls over chunks, and
        google-genai's chat keeps each chunk as its own history turn), `finishReason` on the last.
        A thinking model's call chunk carries the signature and no `finishReason`; an empty text part
        follows with it, the Gemini 3 shape."""
        if turn.message.reasoning():
            return self._thinking_stream(turn, conversation)
        chunks: list[list[dict[str, Any]]] = [
            [{"text": fragment}]
            for part in turn.message.content
            if isinstance(part, Text)
            for fragment in split_fragments(part.text)
        ]
        calls = [_encode_part(part) for part in turn.message.tool_calls()]
        if calls or not chunks:
            chunks.append(calls or [{"text": ""}])  # the finishReason needs a chunk to ride on
        return _frames(chunks, turn, conversation)

    @staticmethod
    def _thinking_stream(turn: ModelTurn, conversation: Conversation) -> list[bytes]:
        thoughts = [part for part in turn.message.reasoning() if is_thought(part)]
        texts = [part for part in turn.message.content if isinstance(part, Text)]
        chunks: list[list[dict[str, Any]]] = [[part.data()] for part in thoughts]
        chunks += [[{"text": fragment}] for part in texts for fragment in split_fragments(part.text)]
        rest = [part for part in turn.message.content if not isinstance(part, Text) and part not in thoughts]
        calls = encode_parts(rest, _fake_part)
        if calls:
            chunks.append(calls)
        chunks.append([{"text": ""}])
        return _frames(chunks, turn, conversation)

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
        return WireError(status, body, message=message, rule=rule, headers=headers, message_index=message_index)


WIRE = Gemini()


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
    return _encode_part(part, with_id=True) if _on_wire(part) else None


def _fake_part(part: Part) -> dict[str, Any] | None:
    return _encode_part(part) if _on_wire(part) else None


def _on_wire(part: Part) -> bool:
    """Empty text is an unset part to Gemini (a 400), and results travel in their own turn."""
    return isinstance(part, ToolCall) or (isinstance(part, Text) and part.text != "")


def _encode_part(part: Part, *, with_id: bool = False) -> dict[str, Any]:
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


class _GeminiStream(StreamDecoder):
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


# -- fake side -----------------------------------------------------------------------------------------


def _to_neutral(
    parsed: ParsedRequest, turns: list[WireContent], starts: list[int]
) -> tuple[list[Message], list[str], list[int]]:
    """Neutral messages, their wire paths, and the first neutral index of each content on the wire.
    `turns` are the contents with runs of model contents merged, `starts[i]` where turn i begins."""
    messages: list[Message] = []
    paths: list[str] = []
    first: list[int] = []
    if parsed.system_texts:
        messages.append(Message("system", [Text(text) for text in parsed.system_texts]))
        paths.append("systemInstruction")
    bounds = [*starts, len(parsed.contents)]
    for index, content in enumerate(turns):
        start, end = bounds[index], bounds[index + 1]
        first.extend([len(messages)] * (end - start))
        path = f"contents[{start}]" if end - start == 1 else f"contents[{start}..{end - 1}]"
        previous = turns[index - 1] if index else None
        for message in _content_messages(index, content, previous):
            messages.append(message)
            paths.append(path)
    return messages, paths, first


def _content_messages(index: int, content: WireContent, previous: WireContent | None) -> list[Message]:
    """A model turn is one assistant message; a user turn is one tool message per functionResponse,
    then a user message for its text."""
    if content.count("call") or (content.effective_role == "model" and not content.count("response")):
        parts: list[Part] = []
        calls = 0
        for part in content.parts:
            reasoning = _reasoning(part)
            if reasoning is not None:
                parts.append(reasoning)
            if part.kind == "call":
                parts.append(_fake_call(index, calls, part))
                calls += 1
            elif part.kind == "text" and not part.thought:
                parts.append(Text(part.text))
        return [Message("assistant", parts)]
    responses = [part for part in content.parts if part.kind == "response"]
    called = [part.name for part in previous.parts if part.kind == "call"] if previous else []
    ids = _pair(index - 1, called, [part.name for part in responses])
    messages = [Message("tool", [_result(call_id, part.payload)]) for call_id, part in zip(ids, responses, strict=True)]
    texts = [Text(part.text) for part in content.parts if part.kind == "text" and not part.thought]
    if texts or not responses:
        messages.append(Message("user", texts))
    return messages


def _pair(call_turn: int, called: list[str], answered: list[str]) -> list[str]:
    """The call each response answers. The API pairs by count, so position decides; but a response
    whose name differs from the call at its position answers the first unanswered call of that name
    (results appended in another order), or no call at all (an invented id): the sandbox then
    reports the call left without a result instead of silently mispairing."""
    unused: dict[str, deque[int]] = {}  # per name, the positions of its calls in order: linear, not quadratic
    for position, name in enumerate(called):
        unused.setdefault(name, deque()).append(position)
    used: set[int] = set()
    ids = []
    for position, name in enumerate(answered):
        if position < len(called) and called[position] == name and position not in used:
            match: int | None = position
        else:
            queue = unused.get(name)
            while queue and queue[0] in used:
                queue.popleft()
            match = queue[0] if queue else None
        if match is None:
            ids.append(f"gemini:{call_turn}:unmatched:{position}")
        else:
            used.add(match)
            ids.append(f"gemini:{call_turn}:{match}")
    return ids


def _fake_call(index: int, position: int, part: WirePart) -> ToolCall:
    return ToolCall(f"gemini:{index}:{position}", part.name, dict(part.payload))


def _reasoning(part: WirePart) -> Reasoning | None:
    """A model part's thought or signature as the skyl part before it (the echo rule reads the wire)."""
    if part.kind == "text" and part.thought:
        thought: dict[str, Any] = {"text": part.text, "thought": True}
        if part.signature:
            thought["thoughtSignature"] = part.signature
        return wire_reasoning(thought)
    return wire_reasoning({"thoughtSignature": part.signature}) if part.signature else None


_RESULT_KEYS = {"result": False, "output": False, "return_value": False, "content": False, "error": True}
"""How clients wrap a function's return value in `functionResponse.response`, which must be an object:
`result`/`output`/`error` (google-genai and the docs), `return_value` (pydantic-ai), `content`
(litellm; the Vercel AI SDK adds the function's `name` beside it)."""


def _result(call_id: str, response: Mapping[str, Any]) -> ToolResult:
    """The tool's answer unwrapped from its envelope (`error` marks a failure); any other object is
    passed on as its JSON text."""
    wrapper = [key for key in response if key != "name"]
    if len(wrapper) == 1 and wrapper[0] in _RESULT_KEYS:
        value = response[wrapper[0]]
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return ToolResult(call_id, text, _RESULT_KEYS[wrapper[0]])
    return ToolResult(call_id, json.dumps(dict(response), ensure_ascii=False))


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


def _frames(chunks: list[list[dict[str, Any]]], turn: ModelTurn, conversation: Conversation) -> list[bytes]:
    """One SSE frame per chunk of parts; the last carries the finish reason."""
    fields = _response_fields(turn, conversation)
    frames = []
    for number, parts in enumerate(chunks):
        finish = _finish(turn) if number == len(chunks) - 1 else {}
        candidate = {"content": {"parts": parts, "role": "model"}, **finish, "index": 0}
        frames.append(sse_frame(dumps({"candidates": [candidate], **fields}), newline="\r\n"))
    return frames


def _response_fields(turn: ModelTurn, conversation: Conversation) -> dict[str, Any]:
    usage = turn.usage
    return {
        "usageMetadata": {
            "promptTokenCount": usage.input_tokens,
            "candidatesTokenCount": usage.output_tokens,
            "totalTokenCount": usage.total_tokens,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": usage.input_tokens}],
        },
        "modelVersion": conversation.model,
        "responseId": stable_token(turn.seed, 22, _B64URL),
    }
