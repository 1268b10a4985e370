"""OpenAI Chat Completions wire format: both sides, judged by the recordings and the official SDK."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox._exceptions import ProviderError, UsageError
from sandbox.messages._events import MessageEnd, StreamEvent, TextDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from sandbox.messages._types import (
    Message,
    Request,
    StopReason,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
    assistant_text,
    tool_result_message,
    user_text,
)
from sandbox.wire import Conversation, ErrorResponse, ModelTurn, Rule, get_wire_format
from sandbox.wire._sse import SSEParser, iter_sse
from sandbox.wire.openai_chat import WIRE, OpenAIChat
from sandbox.wire.openai_chat._validate import NOT_JSON

RECORDINGS = Path(__file__).parents[1] / "recordings"
WEATHER = Tool(
    "get_weather",
    "Current weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
WEATHER_WIRE = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
C1 = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
C2 = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
    "'tool_call_id'. The following tool_call_ids did not have response messages: "
)


# -- helpers -----------------------------------------------------------------------------------------


def call(call_id: str, name: str = "get_weather", arguments: str = '{"city":"Paris"}') -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def asks(*call_ids: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [call(i) for i in call_ids]}


def answer(call_id: str, content: str = "18C") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


USER = {"role": "user", "content": "Weather in Paris?"}


def body(messages: Any, **extra: Any) -> bytes:
    """A request body; `...` leaves a field out."""
    fields: dict[str, Any] = {"model": "gpt-4o-mini", "messages": messages, "tools": [WEATHER_WIRE]}
    fields.update(extra)
    return json.dumps({k: v for k, v in fields.items() if v is not ...}).encode()


def parse(raw: bytes) -> Conversation:
    return WIRE.parse_request(raw, path_model=None, path_stream=False)


def rejection(raw: bytes) -> ErrorResponse:
    with pytest.raises(ErrorResponse) as caught:
        parse(raw)
    return caught.value


def envelope(error: ErrorResponse) -> dict[str, Any]:
    data = json.loads(error.body)
    assert list(data) == ["error"] and list(data["error"]) == ["message", "type", "param", "code"]
    inner: dict[str, Any] = data["error"]
    return inner


def conversation(tool_choice: str | None = None, **raw: Any) -> Conversation:
    return Conversation(model="gpt-4o-mini", messages=[], paths=[], tool_choice=tool_choice, raw=raw)


def tool_turn(*cities: str, seed: str = "step-1", **kw: Any) -> ModelTurn:
    calls = [ToolCall(WIRE.call_id(f"{seed}:{i}"), "get_weather", {"city": c}) for i, c in enumerate(cities)]
    return ModelTurn(Message("assistant", calls), StopReason.TOOL_USE, seed, usage=Usage(76, 24), **kw)


def text_turn(text: str = "It's 18°C and clear.", seed: str = "step-2") -> ModelTurn:
    return ModelTurn(Message("assistant", [Text(text)]), StopReason.END_TURN, seed, usage=Usage(90, 9))


def decode_stream(chunks: Iterable[bytes]) -> list[StreamEvent]:
    decoder = WIRE.stream_decoder()
    events: list[StreamEvent] = []
    for event in iter_sse(chunks):
        events += decoder.feed(event)
    return events + decoder.finish()


def rebuild(events: list[StreamEvent]) -> tuple[str, list[ToolCall], MessageEnd]:
    """What a learner's loop does with the events: text, then each call's joined arguments."""
    starts = {e.index: e for e in events if isinstance(e, ToolCallStart)}
    fragments = {
        index: "".join(e.arguments for e in events if isinstance(e, ToolCallDelta) and e.index == index)
        for index in starts
    }
    assert sorted(e.index for e in events if isinstance(e, ToolCallEnd)) == sorted(starts)
    calls = [ToolCall(s.id, s.name, json.loads(fragments[i])) for i, s in sorted(starts.items())]
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert isinstance(events[-1], MessageEnd)
    return text, calls, events[-1]


def frames(chunks: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(e.data) for e in iter_sse(chunks) if e.data != "[DONE]"]


# -- registry ----------------------------------------------------------------------------------------


def test_registry_serves_openai_chat_at_the_real_url() -> None:
    wire = get_wire_format("openai")
    assert isinstance(wire, OpenAIChat)
    assert (wire.name, wire.base_url, wire.has_call_ids) == ("openai", "https://api.openai.com/v1", True)


# -- client side: encode_request ---------------------------------------------------------------------


def test_encode_request_matches_the_documented_round_trip_shape() -> None:
    request = Request(
        model="gpt-4o-mini",
        system="You are terse.",
        messages=[
            user_text("What's the weather in Paris?"),
            Message("assistant", [ToolCall("call_Y6qJ7ofLgOrBnMD5WbVAeiRV", "get_weather", {"city": "Paris"})]),
            tool_result_message("call_Y6qJ7ofLgOrBnMD5WbVAeiRV", "18C, clear"),
        ],
        tools=[WEATHER],
        max_tokens=200,
    )
    encoded = WIRE.encode_request(request, stream=False, api_key="sk-test")
    assert (encoded.method, encoded.path) == ("POST", "/chat/completions")
    assert encoded.headers == {"Authorization": "Bearer sk-test"}
    assert encoded.json == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "What's the weather in Paris?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_Y6qJ7ofLgOrBnMD5WbVAeiRV",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_Y6qJ7ofLgOrBnMD5WbVAeiRV", "content": "18C, clear"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                },
            }
        ],
        "max_completion_tokens": 200,
    }


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ("get_weather", {"type": "function", "function": {"name": "get_weather"}}),
    ],
    ids=["auto", "none", "required", "forced-name"],
)
def test_encode_request_tool_choice_variants(given: str, expected: Any) -> None:
    request = Request(model="m", messages=[user_text("hi")], tools=[WEATHER], tool_choice=given)
    assert WIRE.encode_request(request, stream=False, api_key=None).json["tool_choice"] == expected


def test_encode_request_stream_asks_for_usage_and_options_pass_through() -> None:
    request = Request(model="m", messages=[user_text("hi")], temperature=0.2, stop_sequences=["END"])
    encoded = WIRE.encode_request(request, stream=True, api_key=None)
    assert encoded.headers == {}
    assert {k: encoded.json[k] for k in ("stream", "stream_options", "temperature", "stop")} == {
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.2,
        "stop": ["END"],
    }
    assert "tools" not in encoded.json and "tool_choice" not in encoded.json


def test_encode_request_keeps_text_beside_calls_and_sends_error_results_verbatim() -> None:
    """Chat Completions has no error flag on a tool message: the content says it, unchanged."""
    request = Request(
        model="m",
        messages=[
            user_text("hi"),
            Message("assistant", [Text("Checking."), ToolCall("call_1", "get_weather", {"city": "Paris"})]),
            tool_result_message("call_1", "ERROR: timeout", is_error=True),
            assistant_text(""),
        ],
    )
    wire = WIRE.encode_request(request, stream=False, api_key=None).json["messages"]
    assert wire[1]["content"] == "Checking." and len(wire[1]["tool_calls"]) == 1
    assert wire[2] == {"role": "tool", "tool_call_id": "call_1", "content": "ERROR: timeout"}
    assert wire[3] == {"role": "assistant", "content": ""}  # never null without calls (C8)


@pytest.mark.parametrize(
    ("message", "match"),
    [
        (Message("tool", [Text("18C")]), r"tool message without exactly its ToolResult.*tool_result_message"),
        (Message("user", [ToolCall("c", "f")]), r"role='user' but holds tool calls"),
        (Message("user", [ToolResult("c", "x")]), r"role='user' but holds a ToolResult"),
    ],
    ids=["tool-without-result", "call-in-user", "result-in-user"],
)
def test_encode_request_misplaced_part_has_clear_error(message: Message, match: str) -> None:
    with pytest.raises(UsageError, match=match):
        WIRE.encode_request(Request(model="m", messages=[message]), stream=False, api_key=None)


# -- client side: decode_response --------------------------------------------------------------------

RECORDED_BODY = {  # wire-openai.md 2.3, exact recorded body
    "id": "chatcmpl-ABfvx6Z4dchiW2nya1N8KMsHFrQRE",
    "object": "chat.completion",
    "created": 1727346165,
    "model": "gpt-4o-2024-08-06",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_Y6qJ7ofLgOrBnMD5WbVAeiRV",
                        "type": "function",
                        "function": {
                            "name": "GetWeatherArgs",
                            "arguments": '{"city":"Edinburgh","country":"UK","units":"c"}',
                        },
                    }
                ],
                "refusal": None,
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {
        "prompt_tokens": 76,
        "completion_tokens": 24,
        "total_tokens": 100,
        "completion_tokens_details": {"reasoning_tokens": 0},
    },
    "system_fingerprint": "fp_e45dabd248",
}


def test_decode_response_reads_the_recorded_tool_call_body() -> None:
    response = WIRE.decode_response(RECORDED_BODY)
    assert response.tool_calls() == [
        ToolCall(
            "call_Y6qJ7ofLgOrBnMD5WbVAeiRV", "GetWeatherArgs", {"city": "Edinburgh", "country": "UK", "units": "c"}
        )
    ]
    assert response.message.role == "assistant" and response.text() == ""
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.usage == Usage(76, 24)
    assert (response.model, response.id) == ("gpt-4o-2024-08-06", "chatcmpl-ABfvx6Z4dchiW2nya1N8KMsHFrQRE")
    assert response.raw is RECORDED_BODY


def test_decode_response_reads_a_text_reply() -> None:
    data = json.loads(json.dumps(RECORDED_BODY))
    data["choices"][0].update(
        finish_reason="stop",
        message={"role": "assistant", "content": "It's 18°C and clear.", "refusal": None, "annotations": []},
    )
    response = WIRE.decode_response(data)
    assert response.message == Message("assistant", [Text("It's 18°C and clear.")])
    assert response.stop_reason is StopReason.END_TURN and response.tool_calls() == []


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("tool_calls", StopReason.TOOL_USE),
        ("function_call", StopReason.TOOL_USE),
        ("stop", StopReason.END_TURN),  # even with calls: OpenAI's answer under a forced tool_choice
        ("length", StopReason.MAX_TOKENS),
        ("content_filter", StopReason.REFUSAL),
        ("something_new", StopReason.OTHER),
    ],
)
def test_decode_response_maps_finish_reason(given: str, expected: StopReason) -> None:
    data = json.loads(json.dumps(RECORDED_BODY))
    data["choices"][0]["finish_reason"] = given
    response = WIRE.decode_response(data)
    assert response.stop_reason is expected
    assert len(response.tool_calls()) == 1  # the call list stays the loop's signal


def _broken(path: str, value: Any) -> dict[str, Any]:
    data: Any = json.loads(json.dumps(RECORDED_BODY))
    *parents, last = path.split(".")
    target = data
    for key in parents:
        target = target[int(key)] if key.isdigit() else target[key]
    target[int(last) if last.isdigit() else last] = value
    return dict(data)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([], r"OpenAI sent a response skyl cannot read: the response body must be a JSON object"),
        (_broken("choices", []), r"needs a non-empty 'choices' list"),
        (_broken("choices.0.message", None), r"choices\[0\]\.message must be a JSON object"),
        (_broken("choices.0.message.content", 7), r"content must be a string or null, got 7"),
        (_broken("choices.0.message.tool_calls", {}), r"'tool_calls' must be a list or null"),
        (
            _broken("choices.0.message.tool_calls.0.function.arguments", '{"city":'),
            r"arguments of tool call call_Y6qJ7ofLgOrBnMD5WbVAeiRV \(GetWeatherArgs\) are not valid JSON",
        ),
        (_broken("choices.0.message.tool_calls.0.function.arguments", "[1]"), r"must be a JSON object"),
        (_broken("choices.0.message.tool_calls.0.id", None), r"needs string 'id'"),
        (_broken("usage", {"prompt_tokens": "76"}), r"usage token counts must be integers"),
    ],
    ids=[
        "not-object",
        "no-choices",
        "no-message",
        "bad-content",
        "bad-tool-calls",
        "bad-json",
        "non-object-arguments",
        "no-id",
        "bad-usage",
    ],
)
def test_decode_response_malformed_body_has_clear_error(data: Any, match: str) -> None:
    with pytest.raises(ProviderError, match=match) as caught:
        WIRE.decode_response(data)
    assert (caught.value.status, caught.value.provider) == (200, "openai")


def test_decode_error_keeps_the_message_verbatim() -> None:
    error = WIRE.decode_error(400, WIRE.error(400, C1, rule=Rule.RESULT_WITHOUT_TURN).body)
    assert (error.message, error.status, error.error_type, error.provider) == (
        C1,
        400,
        "invalid_request_error",
        "openai",
    )
    assert str(error) == f"openai 400 invalid_request_error: {C1}"


def test_decode_error_non_json_body_has_clear_error() -> None:
    assert WIRE.decode_error(502, b"<html>Bad gateway</html>").message == "<html>Bad gateway</html>"
    assert WIRE.decode_error(503, b"").message == "HTTP 503 with an empty body"


# -- client side: streams ----------------------------------------------------------------------------


def test_stream_decoder_reads_the_recorded_single_call_stream() -> None:
    events = decode_stream([(RECORDINGS / "openai-chat-tool-stream.sse").read_bytes()])
    text, calls, end = rebuild(events)
    assert text == ""
    assert calls == [
        ToolCall(
            "call_c91SqDXlYFuETYv8mUHzz6pp", "GetWeatherArgs", {"city": "Edinburgh", "country": "UK", "units": "c"}
        )
    ]
    assert sum(isinstance(e, ToolCallDelta) for e in events) == 14  # every non-empty fragment, unmerged
    assert end == MessageEnd(
        StopReason.TOOL_USE, Usage(76, 24), "gpt-4o-2024-08-06", "chatcmpl-ABfw8AOXnoa2kzy11vVTSjuQhHCQr"
    )


def test_stream_decoder_reads_the_recorded_parallel_stream() -> None:
    events = decode_stream([(RECORDINGS / "openai-chat-parallel-stream.sse").read_bytes()])
    _, calls, end = rebuild(events)
    assert [(c.id, c.name, dict(c.arguments)) for c in calls] == [
        ("call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs", {"city": "Edinburgh", "country": "GB", "units": "c"}),
        ("call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price", {"ticker": "AAPL", "exchange": "NASDAQ"}),
    ]
    assert [e.index for e in events if isinstance(e, ToolCallStart)] == [0, 1]
    assert (end.stop_reason, end.usage) == (StopReason.TOOL_USE, Usage(149, 60))


def test_stream_decoder_survives_any_byte_boundary() -> None:
    raw = (RECORDINGS / "openai-chat-parallel-stream.sse").read_bytes()
    whole = decode_stream([raw])
    parser, decoder, events = SSEParser(), WIRE.stream_decoder(), []
    for start in range(0, len(raw), 7):
        for event in parser.feed(raw[start : start + 7]):
            events += decoder.feed(event)
    assert events + decoder.finish() == whole


def test_stream_decoder_reads_a_text_reply() -> None:
    head = '"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"gpt-4o"'
    deltas = ['{"role":"assistant","content":"","refusal":null}', '{"content":"I\'m"}', '{"content":" fine"}', "{}"]
    lines = [
        f'data: {{{head},"choices":[{{"index":0,"delta":{d},"logprobs":null,"finish_reason":'
        f"{json.dumps('stop' if d == '{}' else None)}}}]}}\n\n"
        for d in deltas
    ]
    events = decode_stream([("".join(lines) + "data: [DONE]\n\n").encode()])
    assert events == [
        TextDelta("I'm"),
        TextDelta(" fine"),
        MessageEnd(StopReason.END_TURN, Usage(), "gpt-4o", "chatcmpl-x"),
    ]


def _chunk(delta: str, finish: str | None = None) -> str:
    return (
        f'data: {{"id":"c","model":"m","choices":[{{"index":0,"delta":{delta},'
        f'"finish_reason":{json.dumps(finish)}}}]}}\n\n'
    )


@pytest.mark.parametrize(
    ("stream", "match"),
    [
        (_chunk('{"content":"hi"}'), r"stream ended before 'data: \[DONE\]'"),
        (_chunk('{"content":"hi"}') + "data: [DONE]\n\n", r"\[DONE\]' before any chunk with a finish_reason"),
        ("data: {not json\n\n", r"a stream chunk is not JSON"),
        (
            _chunk('{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}'),
            r"tool call 0 started without a string 'id'",
        ),
        (
            _chunk(
                '{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":"{\\"a\\""}}]}',
                "tool_calls",
            ),
            r"arguments of tool call call_1 \(streamed call 0\) are not valid JSON",
        ),
        ('data: {"id":"c","choices":{}}\n\n', r"needs a 'choices' list"),
    ],
    ids=["truncated", "done-without-finish", "not-json", "fragment-before-start", "bad-arguments", "bad-choices"],
)
def test_stream_decoder_malformed_stream_has_clear_error(stream: str, match: str) -> None:
    with pytest.raises(ProviderError, match=match) as caught:
        decode_stream([stream.encode()])
    assert caught.value.provider == "openai"


def test_stream_decoder_error_event_has_clear_error() -> None:
    stream = 'data: {"error":{"message":"The server had an error.","type":"server_error"}}\n\n'
    with pytest.raises(ProviderError, match="The server had an error.") as caught:
        decode_stream([stream.encode()])
    assert caught.value.error_type == "server_error"


# -- fake side: validation ---------------------------------------------------------------------------

ORDERING_CASES = [
    # (messages, message, param, rule, index)
    ([answer("call_1"), USER], C1, "messages.[0].role", Rule.RESULT_WITHOUT_TURN, 0),
    ([USER, answer("call_1")], C1, "messages.[1].role", Rule.RESULT_WITHOUT_TURN, 1),
    (
        [USER, {"role": "assistant", "content": "Checking."}, answer("call_1")],
        C1,
        "messages.[2].role",
        Rule.RESULT_WITHOUT_TURN,
        2,
    ),
    ([USER, asks("call_1")], C2 + "call_1", "messages.[1].role", Rule.MISSING_RESULT, 1),
    (
        [USER, asks("call_1", "call_2", "call_3"), answer("call_2"), USER],
        C2 + "call_1, call_3",
        "messages.[1].role",
        Rule.MISSING_RESULT,
        1,
    ),
    (
        [USER, asks("call_1"), asks("call_2"), answer("call_2")],
        C2 + "call_1",
        "messages.[1].role",
        Rule.MISSING_RESULT,
        1,
    ),
    (
        [USER, asks("call_1"), {"role": "tool", "content": "18C"}],
        "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.",
        "messages.[2].tool_call_id",
        Rule.MALFORMED,
        2,
    ),
    (
        [USER, asks("call_1"), answer("call_9")],
        "Invalid parameter: 'tool_call_id' of 'call_9' not found in 'tool_calls' of previous message.",
        "messages.[2].tool_call_id",
        Rule.UNKNOWN_CALL_ID,
        2,
    ),
    (
        [USER, asks("call_1", "call_2"), answer("call_1"), answer("call_1")],
        "Invalid parameter: Duplicate value for 'tool_call_id' of 'call_1', in messages[2] and messages[3].",
        "messages.[3].tool_call_id",
        Rule.DUPLICATE_RESULT,
        3,
    ),
]


@pytest.mark.parametrize(
    ("messages", "message", "param", "rule", "index"),
    ORDERING_CASES,
    ids=[
        "C1-first",
        "C1-after-user",
        "C1-after-text-turn",
        "C2-last",
        "C2-two-missing",
        "C2-next-turn",
        "C3",
        "C4",
        "C5",
    ],
)
def test_parse_request_ordering_mistake_has_clear_error(
    messages: list[Any], message: str, param: str, rule: Rule, index: int | None
) -> None:
    error = rejection(body(messages))
    assert (error.status, error.message, error.rule, error.message_index) == (400, message, rule, index)
    assert envelope(error) == {"message": message, "type": "invalid_request_error", "param": param, "code": None}


LONG_ID = "call_" + "x" * 38
SCHEMA_CASES = [
    # (body, message, param, code)
    (
        body([USER, {"role": "assistant", "tool_calls": []}]),
        "Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum length 1, but got an "
        "empty array instead.",
        "messages[1].tool_calls",
        "empty_array",
    ),
    (
        body([USER, asks(LONG_ID), answer(LONG_ID)]),
        "Invalid 'messages[1].tool_calls[0].id': string too long. Expected a string with maximum length 40, "
        "but got a string with length 43 instead.",
        "messages[1].tool_calls[0].id",
        "string_above_max_length",
    ),
    (
        body([{"role": "user", "content": None}]),
        "Invalid value for 'content': expected a string, got null.",
        "messages.[0].content",
        None,
    ),
    (
        body([USER, {"role": "assistant", "content": None}]),
        "Invalid value for 'content': expected a string, got null.",
        "messages.[1].content",
        None,
    ),
    (
        body([USER, {"role": "assistant", "tool_calls": [call("call_1", name="get weather")]}]),
        "Invalid 'messages[1].tool_calls[0].function.name': string does not match pattern. Expected a string "
        "that matches the pattern '^[a-zA-Z0-9_-]+$'.",
        "messages[1].tool_calls[0].function.name",
        "invalid_value",
    ),
    (
        body([USER], tools=[{"type": "function", "function": {"name": "get.weather"}}]),
        "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches the "
        "pattern '^[a-zA-Z0-9_-]+$'.",
        "tools[0].function.name",
        "invalid_value",
    ),
    (
        body([USER, {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f"}}]}]),
        "Missing required parameter: 'messages[1].tool_calls[0].function.arguments'.",
        "messages[1].tool_calls[0].function.arguments",
        "missing_required_parameter",
    ),
    (
        body([USER], tools=[{"type": "function", "function": {"name": "f", "description": "d" * 2780}}]),
        "Invalid 'tools[0].function.description': string too long. Expected a string with maximum length "
        "1024, but got a string with length 2780 instead.",
        "tools[0].function.description",
        "string_above_max_length",
    ),
    (
        body([USER], tools=..., tool_choice="auto"),
        "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
        "tool_choice",
        None,
    ),
    (
        body([USER], tools=..., parallel_tool_calls=False),
        "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified.",
        "parallel_tool_calls",
        None,
    ),
    (
        body([USER], reasoning_effort="low", thinking=True, top_k=3),
        "Unrecognized request arguments supplied: thinking, top_k",
        None,
        None,
    ),
    (body([USER], thinking=True), "Unrecognized request argument supplied: thinking", None, None),
    (body([USER], model=...), "you must provide a model parameter", None, None),
    (body(...), "Missing required parameter: 'messages'.", "messages", "missing_required_parameter"),
    (
        body([]),
        "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        "messages",
        "empty_array",
    ),
    (
        body([{"role": "user", "content": {"text": "hi"}}]),
        "Invalid type for 'messages[0].content': expected one of a string or array of objects, but got an "
        "object instead.",
        "messages[0].content",
        "invalid_type",
    ),
    (
        body([{"role": "bot", "content": "hi"}]),
        "Invalid value: 'bot'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and "
        "'developer'.",
        "messages[0].role",
        "invalid_value",
    ),
    (
        body([{"content": "hi"}]),
        "Missing required parameter: 'messages[0].role'.",
        "messages[0].role",
        "missing_required_parameter",
    ),
    (
        body([{"role": "user", "content": [{"text": "hi"}]}]),
        "Missing required parameter: 'messages[0].content[0].type'.",
        "messages[0].content[0].type",
        "missing_required_parameter",
    ),
    (
        body([{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]),
        "Invalid value: 'input_text'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', "
        "'audio', and 'file'.",
        "messages[0].content[0].type",
        "invalid_value",
    ),
    (
        body([USER], stream_options={"include_usage": True}),
        "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
        "stream_options",
        None,
    ),
    (
        body([USER], stream="yes"),
        "Invalid type for 'stream': expected a boolean, but got a string instead.",
        "stream",
        "invalid_type",
    ),
    (
        body([USER], tool_choice="any"),
        "Invalid value: 'any'. Supported values are: 'none', 'auto', and 'required'.",
        "tool_choice",
        "invalid_value",
    ),
    (
        body([USER], tools=[{"type": "custom", "custom": {"name": "f"}}]),
        "Invalid value: 'custom'. The sandbox supports only tools of type 'function'.",
        "tools[0].type",
        "invalid_value",
    ),
]


@pytest.mark.parametrize(
    ("raw", "message", "param", "code"),
    SCHEMA_CASES,
    ids=[
        "C6",
        "C7",
        "C8-user",
        "C8-assistant",
        "C9-history",
        "C9-tools",
        "C10",
        "C11",
        "C12",
        "C13",
        "C14-several",
        "C14-one",
        "no-model",
        "no-messages",
        "empty-messages",
        "content-type",
        "role-value",
        "no-role",
        "part-without-type",
        "part-type-value",
        "stream-options-alone",
        "stream-type",
        "tool-choice-value",
        "custom-tool",
    ],
)
def test_parse_request_schema_mistake_has_clear_error(
    raw: bytes, message: str, param: str | None, code: str | None
) -> None:
    error = rejection(raw)
    named = re.match(r"messages\.?\[(\d+)\]", param or "")  # the transcript marks the message named
    index = int(named[1]) if named else None
    assert (error.status, error.message, error.rule, error.message_index) == (400, message, Rule.MALFORMED, index)
    assert envelope(error) == {"message": message, "type": "invalid_request_error", "param": param, "code": code}


@pytest.mark.parametrize(
    "raw",
    [b"", b"{", b"[]", b'"text"', b"NaN", b'{"model": NaN}', b"\xff\xfe", b"[" * 100_000],
    ids=["empty", "truncated", "array", "string", "nan", "nan-inside", "not-utf8", "deep"],
)
def test_parse_request_non_json_body_has_clear_error(raw: bytes) -> None:
    error = rejection(raw)
    assert envelope(error) == {"message": NOT_JSON, "type": "invalid_request_error", "param": None, "code": None}


@pytest.mark.parametrize(
    ("status", "kind"), [(400, "invalid_request_error"), (404, "invalid_request_error"), (500, "server_error")]
)
def test_error_envelope_type_follows_the_status(status: int, kind: str) -> None:
    error = WIRE.error(status, "Invalid URL (POST /v1/chat)", rule=Rule.NOT_FOUND)
    assert (error.status, error.headers["content-type"]) == (status, "application/json")
    assert envelope(error) == {"message": "Invalid URL (POST /v1/chat)", "type": kind, "param": None, "code": None}


def test_parse_request_checks_the_schema_before_the_ordering() -> None:
    error = rejection(body([answer("call_1"), {"role": "assistant", "tool_calls": []}]))
    assert error.message.startswith("Invalid 'messages[1].tool_calls': empty array.")


def test_parse_request_error_body_is_pretty_printed_like_openai() -> None:
    assert rejection(body(...)).body.decode().startswith('{\n  "error": {\n    "message": ')


def test_parse_request_ignores_unknown_keys_a_replayed_sdk_message_carries() -> None:
    replayed = {**asks("call_1"), "refusal": None, "annotations": [], "audio": None, "function_call": None}
    conv = parse(body([USER, replayed, {**answer("call_1"), "name": "x"}]))
    assert conv.messages[1] == Message("assistant", [ToolCall("call_1", "get_weather", {"city": "Paris"})])


def test_parse_request_builds_the_neutral_conversation() -> None:
    raw = body(
        [
            {"role": "developer", "content": "Be terse."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Paris "},
                    {"type": "image_url", "image_url": {}},
                    {"type": "text", "text": "and Rome?"},
                ],
            },
            {"role": "assistant", "content": "", "tool_calls": [call("call_1"), call("call_2", arguments="oops")]},
            answer("call_1"),
            {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "9C"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        ],
        stream=True,
        tool_choice="required",
    )
    conv = parse(raw)
    assert conv.messages == [
        Message("system", [Text("Be terse.")]),
        Message("user", [Text("Paris "), Text("and Rome?")]),
        Message("assistant", [ToolCall("call_1", "get_weather", {"city": "Paris"}), ToolCall("call_2", "get_weather")]),
        tool_result_message("call_1", "18C"),
        tool_result_message("call_2", "9C"),
        Message("assistant", [Text("Done.")]),
    ]
    assert conv.paths == [f"messages[{i}]" for i in range(6)]
    assert conv.tools == [Tool("get_weather", "", {"type": "object"})]
    assert (conv.model, conv.stream, conv.tool_choice, conv.forced_tool_choice) == (
        "gpt-4o-mini",
        True,
        "required",
        True,
    )
    assert conv.raw["stream"] is True


def test_parse_request_reads_the_deprecated_function_role_as_a_result() -> None:
    legacy = {"role": "function", "name": "get_weather", "content": "18C"}
    assert parse(body([USER, legacy])).messages[1] == tool_result_message("get_weather", "18C")
    error = rejection(body([USER, {"role": "function", "content": "18C"}]))
    assert (error.message, error.message_index) == ("Missing required parameter: 'messages[1].name'.", 1)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (..., None),
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ({"type": "function", "function": {"name": "get_weather"}}, "get_weather"),
        ({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": []}}, "auto"),
        ({"type": "custom", "custom": {"name": "get_weather"}}, "get_weather"),
    ],
    ids=["unset", "auto", "none", "required", "function", "allowed-tools", "custom"],
)
def test_parse_request_normalises_tool_choice(given: Any, expected: str | None) -> None:
    assert parse(body([USER], tool_choice=given)).tool_choice == expected


# -- fake side: responses ----------------------------------------------------------------------------


def test_encode_response_tool_turn_matches_the_recorded_shape() -> None:
    data = WIRE.encode_response(tool_turn("Paris"), conversation())
    assert list(data) == ["id", "object", "created", "model", "choices", "usage", "service_tier", "system_fingerprint"]
    assert data["service_tier"] == "default"  # pydantic-ai cassette test_openai/test_openai_tool_output.yaml (2026)
    assert data["id"].startswith("chatcmpl-") and len(data["id"]) == 9 + 29 and data["id"][9:].isalnum()
    assert (data["object"], data["created"], data["model"]) == ("chat.completion", 1767225600, "gpt-4o-mini")
    choice = data["choices"][0]
    assert (choice["index"], choice["logprobs"], choice["finish_reason"]) == (0, None, "tool_calls")
    message = choice["message"]
    assert (message["content"], message["refusal"]) == (None, None)
    [wire_call] = message["tool_calls"]
    assert wire_call["function"] == {"name": "get_weather", "arguments": '{"city":"Paris"}'}
    assert wire_call["id"].startswith("call_") and len(wire_call["id"]) == 29
    assert data["usage"]["prompt_tokens"] == 76 and data["usage"]["total_tokens"] == 100


def test_encode_response_text_turn_has_no_tool_calls_key() -> None:
    message = WIRE.encode_response(text_turn(), conversation())["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "It's 18°C and clear.", "refusal": None, "annotations": []}


@pytest.mark.parametrize(
    ("turn", "choice", "expected"),
    [
        (tool_turn("Paris"), ..., "tool_calls"),
        (tool_turn("Paris"), "auto", "tool_calls"),
        (tool_turn("Paris"), "required", "stop"),
        (tool_turn("Paris"), "get_weather", "stop"),
        (tool_turn("Paris", raw_stop_reason="tool_calls"), "get_weather", "tool_calls"),
        (text_turn(), ..., "stop"),
        (ModelTurn(Message("assistant", [Text("It")]), StopReason.MAX_TOKENS, "s"), ..., "length"),
    ],
    ids=["tool", "tool-auto", "tool-required", "tool-forced", "raw-override", "text", "max-tokens"],
)
def test_encode_response_finish_reason(turn: ModelTurn, choice: Any, expected: str) -> None:
    conv = conversation() if choice is ... else conversation(tool_choice=choice)
    assert WIRE.encode_response(turn, conv)["choices"][0]["finish_reason"] == expected
    assert frames(WIRE.encode_stream(turn, conv))[-1]["choices"][0]["finish_reason"] == expected


def test_encode_stream_single_call_is_framed_like_the_recording() -> None:
    chunks = WIRE.encode_stream(tool_turn("Paris"), conversation(stream_options={"include_usage": True}))
    assert all(c.startswith(b"data: {") and c.endswith(b"}\n\n") for c in chunks[:-1])
    assert chunks[-1] == b"data: [DONE]\n\n"
    sent = frames(chunks)
    # Key order and `"usage": null` on every chunk but the last, as the 2026 recording of
    # pydantic-ai's test_openai/test_run_stream_sync_streams_real_model.yaml has them.
    head = ["id", "object", "created", "model", "service_tier", "system_fingerprint", "choices", "usage"]
    assert all(list(f) == head for f in sent)
    assert all(f["usage"] is None for f in sent[:-1]) and sent[-1]["usage"] is not None
    first = sent[0]["choices"][0]["delta"]
    assert list(first) == ["role", "content", "tool_calls", "refusal"]
    assert first["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": ""}
    fragments = [f["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] for f in sent[1:-2]]
    assert len(fragments) > 1 and "".join(fragments) == '{"city":"Paris"}'
    assert sent[-2]["choices"] == [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "tool_calls"}]
    assert sent[-1]["choices"] == [] and sent[-1]["usage"]["completion_tokens"] == 24


def test_encode_stream_parallel_calls_open_one_after_another() -> None:
    sent = frames(WIRE.encode_stream(tool_turn("Paris", "Rome"), conversation()))
    assert sent[0]["choices"][0]["delta"] == {"role": "assistant", "content": None}
    order = [tc["index"] for f in sent for tc in f["choices"][0]["delta"].get("tool_calls", [])]
    assert order == sorted(order) and set(order) == {0, 1}
    assert all("usage" not in f for f in sent)  # no include_usage, no usage anywhere


def test_encode_stream_text_reply_starts_with_the_recorded_role_delta() -> None:
    sent = frames(WIRE.encode_stream(text_turn(), conversation()))
    assert sent[0]["choices"][0]["delta"] == {"role": "assistant", "content": "", "refusal": None}
    assert "".join(f["choices"][0]["delta"].get("content") or "" for f in sent) == "It's 18°C and clear."


def test_encode_response_and_stream_are_deterministic_across_processes() -> None:
    turn_code = (
        "from sandbox.wire.openai_chat import WIRE; from sandbox.wire import Conversation, ModelTurn; "
        "from sandbox.messages._types import *; import hashlib, json; "
        "t = ModelTurn(Message('assistant', [Text('Hi'), ToolCall(WIRE.call_id('s:0'), 'f', {'a': 1})]), "
        "StopReason.TOOL_USE, 's', usage=Usage(3, 4)); "
        "c = Conversation(model='m', messages=[], paths=[], raw={'stream_options': {'include_usage': True}}); "
        "print(hashlib.sha256(b''.join(WIRE.encode_stream(t, c)) + json.dumps(WIRE.encode_response(t, c))"
        ".encode()).hexdigest())"
    )
    env = {**os.environ, "PYTHONHASHSEED": "random"}
    here = subprocess.run([sys.executable, "-c", turn_code], capture_output=True, text=True, env=env, check=True)
    namespace: dict[str, Any] = {}
    exec(turn_code.replace("print(", "out = ("), namespace)  # the same code in this process
    assert here.stdout.strip() == namespace["out"]
    turn, conv = tool_turn("Paris"), conversation()
    assert WIRE.encode_stream(turn, conv) == WIRE.encode_stream(turn, conv)
    assert WIRE.call_id("a") != WIRE.call_id("b") and WIRE.call_id("a") == WIRE.call_id("a")


# -- round trips -------------------------------------------------------------------------------------


def test_round_trip_keeps_every_call_and_result_in_order() -> None:
    request = Request(
        model="gpt-4o-mini",
        system="Be terse.",
        tools=[WEATHER],
        messages=[
            user_text("Paris and Rome?"),
            Message(
                "assistant",
                [
                    ToolCall("call_a", "get_weather", {"city": "Paris"}),
                    ToolCall("call_b", "get_weather", {"city": "Rome", "units": ["c", 1, None]}),
                ],
            ),
            tool_result_message("call_a", "18C"),
            tool_result_message("call_b", "ERROR: no data", is_error=True),
        ],
    )
    encoded = WIRE.encode_request(request, stream=True, api_key="k")
    conv = parse(json.dumps(encoded.json).encode())
    assert conv.messages[1:3] == request.messages[:2]
    assert [m.tool_results()[0].call_id for m in conv.messages[3:]] == ["call_a", "call_b"]
    assert [m.tool_results()[0].content for m in conv.messages[3:]] == ["18C", "ERROR: no data"]
    assert conv.messages[0] == Message("system", [Text("Be terse.")]) and conv.stream


@pytest.mark.parametrize(
    "turn", [tool_turn("Paris"), tool_turn("Paris", "Rome"), text_turn()], ids=["one-call", "two-calls", "text"]
)
def test_round_trip_fake_output_decodes_to_the_scripted_turn(turn: ModelTurn) -> None:
    conv = conversation(stream_options={"include_usage": True})
    response = WIRE.decode_response(json.loads(json.dumps(WIRE.encode_response(turn, conv))))
    assert (response.message, response.usage) == (turn.message, turn.usage)
    text, calls, end = rebuild(decode_stream(WIRE.encode_stream(turn, conv)))
    assert (text, calls) == (turn.message.text(), turn.message.tool_calls())
    assert (end.stop_reason, end.usage, end.id) == (turn.stop_reason, turn.usage, response.id)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
VALID = json.loads(
    body(
        [
            {"role": "system", "content": "s"},
            USER,
            {**asks("call_1", "call_2"), "content": "x"},
            answer("call_1"),
            {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "t"}]},
        ],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        stream=True,
        stream_options={"include_usage": True},
    )
)
KEYS = [
    "model",
    "messages",
    "role",
    "content",
    "tool_calls",
    "id",
    "type",
    "function",
    "name",
    "arguments",
    "tool_call_id",
    "tools",
    "tool_choice",
    "text",
    "stream",
    "stream_options",
    "parameters",
]


def mutate(value: Any, draw: Callable[[st.SearchStrategy[Any]], Any]) -> Any:
    """Replace, delete or retype one spot somewhere inside a valid body."""
    if isinstance(value, (dict, list)) and value and draw(st.booleans()):
        keys = list(value) if isinstance(value, dict) else list(range(len(value)))
        key = draw(st.sampled_from(keys))
        copy: Any = dict(value) if isinstance(value, dict) else list(value)
        if draw(st.integers(0, 5)) == 0:
            del copy[key]
        else:
            copy[key] = mutate(copy[key], draw)
        return copy
    if isinstance(value, dict) and draw(st.booleans()):
        return {**value, draw(st.sampled_from(KEYS)): draw(json_values)}
    return draw(json_values)


def survives(raw: bytes) -> None:
    try:
        parse(raw)
    except ErrorResponse as error:
        assert error.status == 400 and envelope(error)["message"]


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_parse_request_any_json_value_is_a_provider_error_or_accepted(value: Any) -> None:
    survives(json.dumps(value).encode())


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_parse_request_mutated_valid_body_is_a_provider_error_or_accepted(data: st.DataObject) -> None:
    survives(json.dumps(mutate(VALID, data.draw)).encode())


@settings(max_examples=50)
@given(st.binary(max_size=64))
def test_parse_request_any_bytes_are_a_provider_error(raw: bytes) -> None:
    survives(raw)


names = st.from_regex(r"[a-zA-Z0-9_-]{1,12}", fullmatch=True)
arguments = st.dictionaries(st.text(max_size=5), st.none() | st.integers() | st.text(max_size=5), max_size=3)


@settings(max_examples=60)
@given(st.lists(st.lists(st.tuples(names, arguments), min_size=1, max_size=3), max_size=4))
def test_round_trip_any_tool_loop_history_survives(rounds: list[list[tuple[str, dict[str, Any]]]]) -> None:
    messages = [user_text("go")]
    for r, calls in enumerate(rounds):
        made = [ToolCall(f"call_{r}_{i}", name, args) for i, (name, args) in enumerate(calls)]
        messages += [Message("assistant", made), *(tool_result_message(c.id, f"out {c.id}") for c in made)]
    request = Request(model="m", messages=messages, tools=[Tool(n) for n in {n for c in rounds for n, _ in c}])
    conv = parse(json.dumps(WIRE.encode_request(request, stream=False, api_key=None).json).encode())
    assert conv.messages == messages


# -- the official SDK, against the fake side ---------------------------------------------------------


def sdk_client(turn: ModelTurn, seen: list[Conversation] | None = None) -> openai.OpenAI:
    def handler(request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/chat/completions"
        try:
            conv = WIRE.parse_request(request.content, path_model=None, path_stream=False)
        except ErrorResponse as error:
            return httpx2.Response(error.status, content=error.body, headers=error.headers)
        if seen is not None:
            seen.append(conv)
        if conv.stream:
            return httpx2.Response(
                200, content=b"".join(WIRE.encode_stream(turn, conv)), headers={"content-type": WIRE.stream_media_type}
            )
        return httpx2.Response(200, json=WIRE.encode_response(turn, conv))

    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    return openai.OpenAI(api_key="sk-test", base_url="http://test/v1", http_client=http, max_retries=0)


SDK_TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
SDK_MESSAGES: Any = [{"role": "user", "content": "Weather in Paris and Rome?"}]


def test_sdk_parses_a_tool_call_and_its_replay_is_accepted() -> None:
    turn, seen = tool_turn("Paris", "Rome"), list[Conversation]()
    client = sdk_client(turn, seen)
    completion = client.chat.completions.create(model="gpt-4o-mini", messages=SDK_MESSAGES, tools=SDK_TOOLS)
    message = completion.choices[0].message
    assert completion.choices[0].finish_reason == "tool_calls"
    calls = [c for c in message.tool_calls or [] if c.type == "function"]
    assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        (c.id, c.name, c.arguments) for c in turn.message.tool_calls()
    ]
    assert completion.usage is not None and completion.usage.total_tokens == 100
    history = [
        *SDK_MESSAGES,
        message.model_dump(exclude_none=True),
        *({"role": "tool", "tool_call_id": c.id, "content": "18C"} for c in message.tool_calls or []),
    ]
    client.chat.completions.create(model="gpt-4o-mini", messages=history, tools=SDK_TOOLS)
    assert seen[1].messages[1] == turn.message  # the SDK's replay is the turn the fake sent


def test_sdk_streams_a_tool_call_with_usage() -> None:
    client = sdk_client(tool_turn("Paris"))
    stream = client.chat.completions.create(
        model="gpt-4o-mini", messages=SDK_MESSAGES, tools=SDK_TOOLS, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    fragments = [
        tc.function.arguments
        for c in chunks
        for choice in c.choices
        for tc in choice.delta.tool_calls or []
        if tc.function and tc.function.arguments
    ]
    assert len(fragments) > 1 and json.loads("".join(fragments)) == {"city": "Paris"}
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 24


def test_sdk_stream_helper_assembles_the_turn() -> None:
    client = sdk_client(tool_turn("Paris", "Rome"))
    with client.chat.completions.stream(model="gpt-4o-mini", messages=SDK_MESSAGES, tools=SDK_TOOLS) as stream:
        done = [e.arguments for e in stream if e.type == "tool_calls.function.arguments.done"]
        final = stream.get_final_completion()
    assert [json.loads(d) for d in done] == [{"city": "Paris"}, {"city": "Rome"}]
    assert final.choices[0].finish_reason == "tool_calls"
    assert [c.function.name for c in final.choices[0].message.tool_calls or []] == ["get_weather"] * 2


def test_sdk_stream_helper_reads_a_text_reply() -> None:
    client = sdk_client(text_turn())
    with client.chat.completions.stream(model="gpt-4o-mini", messages=SDK_MESSAGES) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "It's 18°C and clear."


@pytest.mark.parametrize(
    ("history", "message", "param"),
    [
        ([*SDK_MESSAGES, {"role": "assistant", "content": "Checking."}, answer("call_1")], C1, "messages.[2].role"),
        ([*SDK_MESSAGES, asks("call_1", "call_2"), answer("call_1")], C2 + "call_2", "messages.[1].role"),
    ],
    ids=["C1", "C2"],
)
def test_sdk_ordering_mistake_raises_bad_request_with_the_verbatim_message(
    history: Any, message: str, param: str
) -> None:
    client = sdk_client(text_turn())
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="gpt-4o-mini", messages=history, tools=SDK_TOOLS)
    error = caught.value
    assert error.message == f"Error code: 400 - {message}"
    assert error.body == {"message": message, "type": "invalid_request_error", "param": param, "code": None}
    assert (error.param, error.code, error.type) == (param, None, "invalid_request_error")
