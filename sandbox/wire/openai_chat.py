"""OpenAI Chat Completions (`POST /v1/chat/completions`), both sides of the wire.

Shapes follow shared/reference/wire-openai.md sections 2 and 4: tool calls travel as
`assistant.tool_calls[]` with arguments as a JSON *string*, each result is its own `tool` message, and
streams are `data:`-only SSE frames ending in `data: [DONE]`, framed like the recorded gpt-4o streams.
The fake side's validation lives in `openai_chat_validate`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._events import MessageEnd, StreamEvent, TextDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from .._exceptions import ProviderError, UsageError
from .._types import Message, Part, Request, Response, StopReason, Text, Tool, ToolCall, ToolResult, Usage
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
from ._openai import openai_error, openai_request_headers
from ._reasoning import check_provider
from ._sse import SSEEvent, dumps, sse_frame
from .openai_chat_validate import Rejection, check_request, load_body

__all__ = ["WIRE", "OpenAIChat"]

PROVIDER = "OpenAI"
_STOP_REASONS = {
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    # "stop" even when calls were made: OpenAI sends it under a forced tool_choice. The call list,
    # not the stop reason, ends a loop.
    "stop": StopReason.END_TURN,
    "length": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
}
_FINISH_REASONS = {
    StopReason.TOOL_USE: "tool_calls",
    StopReason.END_TURN: "stop",
    StopReason.STOP_SEQUENCE: "stop",
    StopReason.MAX_TOKENS: "length",
    StopReason.REFUSAL: "content_filter",
    StopReason.OTHER: "stop",
}


class OpenAIChat(WireFormat):
    """Chat Completions: the format most "OpenAI-compatible" servers copy."""

    name = "openai"
    base_url = "https://api.openai.com/v1"
    path = "/chat/completions"
    stream_media_type = "text/event-stream; charset=utf-8"

    def request_headers(self, request_digest: str) -> dict[str, str]:
        return openai_request_headers(request_digest)

    # -- client side ---------------------------------------------------------------------------

    def encode_request(self, request: Request, *, stream: bool, api_key: str | None) -> EncodedRequest:
        body: dict[str, Any] = {"model": request.model, "messages": _encode_messages(request)}
        if request.tools:
            body["tools"] = [_encode_tool(tool) for tool in request.tools]
        if request.tool_choice is not None:
            # Sent even without tools, so that a learner meets the API's own error (C12).
            body["tool_choice"] = _encode_tool_choice(request.tool_choice)
        # max_tokens is deprecated and rejected by reasoning models; every chat model takes this one.
        body["max_completion_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop_sequences:
            body["stop"] = list(request.stop_sequences)
        if stream:
            # Without include_usage a stream carries no token counts at all.
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        return EncodedRequest(self.path, body, headers)

    def decode_response(self, data: Any) -> Response:
        completion = _expect_dict(data, "the response body")
        choices = completion.get("choices")
        if not isinstance(choices, list) or not choices:
            raise _malformed(f"a chat completion needs a non-empty 'choices' list, got {choices!r}")
        choice = _expect_dict(choices[0], "choices[0]")
        wire = _expect_dict(choice.get("message"), "choices[0].message")
        content = wire.get("content")
        if content is not None and not isinstance(content, str):
            raise _malformed(f"choices[0].message.content must be a string or null, got {content!r}")
        parts: list[Part] = [Text(content)] if content else []
        parts += [_decode_call(call, f"choices[0].message.tool_calls[{i}]") for i, call in _calls(wire)]
        return Response(
            message=Message("assistant", parts),
            stop_reason=_stop_reason(choice.get("finish_reason")),
            usage=_decode_usage(completion.get("usage")),
            model=_optional_str(completion, "model"),
            id=_optional_str(completion, "id"),
            raw=data,
        )

    def stream_decoder(self) -> StreamDecoder:
        return _ChatStreamDecoder()

    # -- fake side -----------------------------------------------------------------------------

    def parse_request(self, body: bytes, *, path_model: str | None, path_stream: bool) -> Conversation:
        """The request as OpenAI reads it; the model and stream flag live in the body, not the path."""
        try:
            data = load_body(body)
            check_request(data)
        except Rejection as problem:
            raise self.error(
                400,
                problem.message,
                rule=problem.rule,
                param=problem.param,
                code=problem.code,
                message_index=problem.index,
            ) from None
        messages: list[dict[str, Any]] = data["messages"]
        return Conversation(
            model=data["model"],
            messages=[_neutral_message(message) for message in messages],
            paths=[f"messages[{index}]" for index in range(len(messages))],
            tools=[_neutral_tool(tool["function"]) for tool in data.get("tools") or ()],
            tool_choice=_normalise_tool_choice(data.get("tool_choice")),
            stream=data.get("stream") is True,
            raw=data,
        )

    def call_id(self, seed: str) -> str:
        return "call_" + stable_token(f"call:{seed}", 24)

    def encode_response(self, turn: ModelTurn, conversation: Conversation) -> dict[str, Any]:
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
            message["tool_calls"] = [_encode_call(call) for call in calls]
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

    def encode_stream(self, turn: ModelTurn, conversation: Conversation) -> list[bytes]:
        """Frames shaped like recordings/openai-chat-{tool,parallel}-stream.sse.

        A lone call opens inside the role chunk (the single-call recording); several calls each open
        in a chunk of their own after a bare role chunk (the parallel recording); calls never interleave.
        """
        head = _envelope(turn, conversation, "chat.completion.chunk")
        calls = turn.message.tool_calls()
        text = turn.message.text()
        deltas: list[dict[str, Any]] = []
        if text or not calls:
            deltas.append({"role": "assistant", "content": "", "refusal": None})
            deltas += [{"content": fragment} for fragment in split_fragments(text)]
        elif len(calls) > 1:
            deltas.append({"role": "assistant", "content": None})
        for index, call in enumerate(calls):
            arguments = _arguments_json(call.arguments)
            opening = {
                "index": index,
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            if not deltas:
                deltas.append({"role": "assistant", "content": None, "tool_calls": [opening], "refusal": None})
            else:
                deltas.append({"tool_calls": [opening]})
            deltas += [
                {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}
                for fragment in split_fragments(arguments)
            ]
        chunks = [_chunk(head, delta, None) for delta in deltas]
        chunks.append(_chunk(head, {}, _finish_reason(turn, conversation)))
        options = conversation.raw.get("stream_options")
        if isinstance(options, Mapping) and options.get("include_usage") is True:
            # With usage asked for, every chunk says `"usage": null` until the last one carries it
            # (pydantic-ai cassette test_openai/test_run_stream_sync_streams_real_model.yaml, 2026).
            chunks = [{**chunk, "usage": None} for chunk in chunks]
            chunks.append({**head, "choices": [], "usage": _encode_usage(turn.usage)})
        return [sse_frame(dumps(chunk)) for chunk in chunks] + [sse_frame("[DONE]")]

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
        kind = "server_error" if status >= 500 else "invalid_request_error"
        envelope = {"error": {"message": message, "type": kind, "param": param, "code": code}}
        return openai_error(status, envelope, rule=rule, message_index=message_index)


# -- client side: encoding ---------------------------------------------------------------------------


def _encode_messages(request: Request) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    if request.system is not None:
        wire.append({"role": "system", "content": request.system})
    for index, message in enumerate(request.messages):
        wire += _encode_message(message, index)
    return wire


def _encode_message(message: Message, index: int) -> list[dict[str, Any]]:
    """One neutral message as wire messages: a `tool` message holding several results becomes several."""
    # Chat Completions returns no reasoning to send back (a reasoning model keeps it to itself and
    # reports only `reasoning_tokens`), so it has no reasoning echo rule; another provider's is refused.
    check_provider(message, "openai")
    calls = message.tool_calls()
    results = message.tool_results()
    if calls and message.role != "assistant":
        raise UsageError(
            f"messages[{index}] has role={message.role!r} but holds tool calls: only an "
            "assistant turn can call tools. Append the Response's `message` as it came back."
        )
    if message.role == "tool":
        if not results or message.text():
            raise UsageError(
                f"messages[{index}] is a tool message without exactly its ToolResult parts. "
                "Build it with tool_result_message(call.id, output)."
            )
        return [{"role": "tool", "tool_call_id": result.call_id, "content": result.content} for result in results]
    if results:
        raise UsageError(
            f"messages[{index}] has role={message.role!r} but holds a ToolResult: OpenAI "
            "takes each result as its own tool message. Use tool_result_message(call.id, output)."
        )
    text = message.text()
    if message.role != "assistant":
        return [{"role": message.role, "content": text}]
    wire: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
    if calls:
        wire["tool_calls"] = [_encode_call(call) for call in calls]
    return [wire]


def _encode_call(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": _arguments_json(call.arguments)},
    }


def _arguments_json(arguments: Mapping[str, Any]) -> str:
    return json.dumps(dict(arguments), separators=(",", ":"), ensure_ascii=False)


def _encode_tool(tool: Tool) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = dict(tool.parameters)
    return {"type": "function", "function": function}


def _encode_tool_choice(choice: str) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


# -- client side: decoding ---------------------------------------------------------------------------


def _malformed(what: str, status: int = 200) -> ProviderError:
    return ProviderError(f"{PROVIDER} sent a response skyl cannot read: {what}.", status=status, provider="openai")


def _expect_dict(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _malformed(f"{where} must be a JSON object, got {value!r}")
    return value


def _optional_str(data: Mapping[str, Any], key: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _malformed(f"'{key}' must be a string, got {value!r}")
    return value


def _calls(message: Mapping[str, Any]) -> list[tuple[int, Any]]:
    calls = message.get("tool_calls")
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise _malformed(f"'tool_calls' must be a list or null, got {calls!r}")
    return list(enumerate(calls))


def _decode_call(data: Any, where: str) -> ToolCall:
    call = _expect_dict(data, where)
    function = _expect_dict(call.get("function"), f"{where}.function")
    call_id, name, arguments = call.get("id"), function.get("name"), function.get("arguments")
    if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(arguments, str):
        raise _malformed(f"{where} needs string 'id', 'function.name' and 'function.arguments', got {data!r}")
    return ToolCall(call_id, name, _decode_arguments(arguments, f"tool call {call_id} ({name})"))


def _decode_arguments(arguments: str, which: str) -> dict[str, Any]:
    """The arguments JSON as a dict; the SDK warns the model "does not always generate valid JSON"."""
    if arguments == "":
        return {}
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):
        raise _malformed(f"the arguments of {which} are not valid JSON: {arguments!r}") from None
    if not isinstance(value, dict):
        raise _malformed(f"the arguments of {which} must be a JSON object, got {arguments!r}")
    return value


def _stop_reason(value: Any) -> StopReason:
    if value is not None and not isinstance(value, str):
        raise _malformed(f"'finish_reason' must be a string, got {value!r}")
    return _STOP_REASONS.get(value or "", StopReason.OTHER)


def _decode_usage(data: Any) -> Usage:
    if data is None:
        return Usage()
    usage = _expect_dict(data, "usage")
    prompt, completion = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
    if not isinstance(prompt, int) or not isinstance(completion, int):
        raise _malformed(f"usage token counts must be integers, got {data!r}")
    return Usage(prompt, completion)


class _ChatStreamDecoder(StreamDecoder):
    """Chunks -> skyl events. The turn ends at `data: [DONE]`, after the optional usage chunk."""

    def __init__(self) -> None:
        self._calls: dict[int, tuple[int, str, list[str]]] = {}  # wire index -> (our index, id, fragments)
        self._stop: StopReason | None = None
        self._usage = Usage()
        self._model = ""
        self._id = ""
        self._done = False

    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        if self._done:
            return []  # the SDK stops reading at [DONE] too
        if event.data.startswith("[DONE]"):
            return self._end()
        try:
            data = json.loads(event.data)
        except (ValueError, RecursionError):
            raise _malformed(f"a stream chunk is not JSON: {event.data[:200]!r}") from None
        chunk = _expect_dict(data, "a stream chunk")
        error = chunk.get("error")
        if error:
            message = error.get("message") if isinstance(error, dict) else None
            kind = error.get("type") if isinstance(error, dict) else None
            raise ProviderError(
                message if isinstance(message, str) else str(error),
                status=200,
                provider="openai",
                error_type=kind if isinstance(kind, str) else "",
                body=chunk,
            )
        self._model = _optional_str(chunk, "model") or self._model
        self._id = _optional_str(chunk, "id") or self._id
        if chunk.get("usage") is not None:
            self._usage = _decode_usage(chunk["usage"])
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            raise _malformed(f"a stream chunk needs a 'choices' list, got {choices!r}")
        events: list[StreamEvent] = []
        for choice in choices:
            events += self._choice(_expect_dict(choice, "a chunk's choice"))
        return events

    def finish(self) -> list[StreamEvent]:
        if not self._done:
            raise _malformed("the stream ended before 'data: [DONE]'; the turn is incomplete")
        return []

    def _choice(self, choice: Mapping[str, Any]) -> list[StreamEvent]:
        if choice.get("index", 0) != 0:
            return []  # n > 1 candidates: skyl reads the first, as Response does
        delta = _expect_dict(choice.get("delta", {}), "a chunk's delta")
        events: list[StreamEvent] = []
        content = delta.get("content")
        if content is not None and not isinstance(content, str):
            raise _malformed(f"delta.content must be a string or null, got {content!r}")
        if content:
            events.append(TextDelta(content))
        for _, call in _calls(delta):
            events += self._call_delta(_expect_dict(call, "a delta's tool call"))
        if choice.get("finish_reason") is not None:
            self._stop = _stop_reason(choice["finish_reason"])
            events += self._close_calls()
        return events

    def _call_delta(self, call: Mapping[str, Any]) -> list[StreamEvent]:
        wire_index = call.get("index")
        if not isinstance(wire_index, int):
            raise _malformed(f"a streamed tool call needs an integer 'index', got {dict(call)!r}")
        function = _expect_dict(call.get("function") or {}, "a streamed tool call's function")
        events: list[StreamEvent] = []
        if wire_index not in self._calls:
            call_id, name = call.get("id"), function.get("name")
            if not isinstance(call_id, str) or not isinstance(name, str):
                raise _malformed(f"tool call {wire_index} started without a string 'id' and 'function.name'")
            self._calls[wire_index] = (len(self._calls), call_id, [])
            events.append(ToolCallStart(self._calls[wire_index][0], call_id, name))
        fragment = function.get("arguments")
        if fragment is not None and not isinstance(fragment, str):
            raise _malformed(f"argument fragments must be strings, got {fragment!r}")
        if fragment:
            index, _, fragments = self._calls[wire_index]
            fragments.append(fragment)
            events.append(ToolCallDelta(index, fragment))
        return events

    def _close_calls(self) -> list[StreamEvent]:
        """Every call is complete at finish_reason: check its JSON, then end it, in call order."""
        for index, call_id, fragments in self._calls.values():
            _decode_arguments("".join(fragments), f"tool call {call_id} (streamed call {index})")
        return [ToolCallEnd(index) for index, _, _ in self._calls.values()]

    def _end(self) -> list[StreamEvent]:
        if self._stop is None:
            raise _malformed("the stream sent 'data: [DONE]' before any chunk with a finish_reason")
        self._done = True
        return [MessageEnd(self._stop, self._usage, self._model, self._id)]


# -- fake side ---------------------------------------------------------------------------------------


def _texts(content: Any) -> list[Text]:
    """Text parts of validated content; images and audio have no neutral form and are dropped."""
    if content is None:
        return []
    if isinstance(content, str):
        return [Text(content)]
    return [Text(part["text"]) for part in content if part["type"] == "text"]


def _neutral_message(message: Mapping[str, Any]) -> Message:
    role = message["role"]
    texts = _texts(message.get("content"))
    if role in ("system", "developer"):
        return Message("system", texts)
    if role == "user":
        return Message("user", texts)
    content = "".join(part.text for part in texts)
    if role == "tool":
        return Message("tool", [ToolResult(message["tool_call_id"], content)])
    if role == "function":
        # The deprecated function role pairs a result with a call by function name.
        return Message("tool", [ToolResult(message["name"], content)])
    calls = [_neutral_call(call) for call in message.get("tool_calls") or ()]
    return Message("assistant", [*([Text(content)] if content else []), *calls])


def _neutral_call(call: Mapping[str, Any]) -> ToolCall:
    """A replayed call. Arguments that are not a JSON object are accepted, as OpenAI accepts them
    (reference C15), and read as no arguments."""
    function = call["function"]
    try:
        arguments = json.loads(function["arguments"])
    except (ValueError, RecursionError):
        arguments = {}
    return ToolCall(call["id"], function["name"], arguments if isinstance(arguments, dict) else {})


def _neutral_tool(function: Mapping[str, Any]) -> Tool:
    parameters = function.get("parameters")
    if parameters is None:
        return Tool(function["name"], function.get("description") or "")
    return Tool(function["name"], function.get("description") or "", parameters)


def _normalise_tool_choice(choice: Any) -> str | None:
    """`auto`/`none`/`required`, or the forced tool's name; allowed_tools reads as its mode."""
    if choice is None or isinstance(choice, str):
        return choice
    kind = choice["type"]
    return str(choice[kind]["mode" if kind == "allowed_tools" else "name"])


def _finish_reason(turn: ModelTurn, conversation: Conversation) -> str:
    if turn.raw_stop_reason is not None:
        return turn.raw_stop_reason
    if turn.stop_reason is StopReason.TOOL_USE and conversation.forced_tool_choice:
        return "stop"  # what OpenAI sends under a forced tool_choice (reference 2.5)
    return _FINISH_REASONS[turn.stop_reason]


def _envelope(turn: ModelTurn, conversation: Conversation, kind: str) -> dict[str, Any]:
    """The fields every body and chunk repeats, in the recorded key order."""
    return {
        "id": "chatcmpl-" + stable_token(f"chatcmpl:{turn.response_seed}", 29),
        "object": kind,
        "created": CREATED_AT,
        "model": conversation.model,
        "service_tier": "default",
        "system_fingerprint": "fp_" + stable_token(f"fp:{conversation.model}", 10, HEX),
    }


def _chunk(head: Mapping[str, Any], delta: Mapping[str, Any], finish: str | None) -> dict[str, Any]:
    return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}


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


WIRE = OpenAIChat()
