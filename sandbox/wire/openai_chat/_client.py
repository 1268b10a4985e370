"""The skyl client's side of Chat Completions: the request it sends, and the answer it reads, whole
or streamed. Touches only the neutral types and the client half of the wire contract; the fake side
borrows only `encode_call`, a tool call being the same object in a request and in a response.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..._exceptions import ProviderError, UsageError
from ...messages._events import MessageEnd, StreamEvent, TextDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from ...messages._types import Message, Part, Request, Response, StopReason, Text, Tool, ToolCall, Usage
from .._base import (
    EncodedRequest,
    StreamDecoder,
)
from .._reasoning import check_provider
from .._sse import SSEEvent

__all__ = ["PATH", "ChatStreamDecoder", "arguments_json", "decode_response", "encode_call", "encode_request"]

PATH = "/chat/completions"
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


def encode_request(request: Request, *, stream: bool, api_key: str | None) -> EncodedRequest:
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
    return EncodedRequest(PATH, body, headers)


def decode_response(data: Any) -> Response:
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
        wire["tool_calls"] = [encode_call(call) for call in calls]
    return [wire]


def encode_call(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments_json(call.arguments)},
    }


def arguments_json(arguments: Mapping[str, Any]) -> str:
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


class ChatStreamDecoder(StreamDecoder):
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
