"""Anthropic Messages wire format: both sides, judged by the captured bytes and the official SDK."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable, Iterable
from typing import Any

import anthropic
import httpx2
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
    system_text,
    tool_result_message,
    user_text,
)
from sandbox.wire import Conversation, ErrorResponse, ModelTurn, Rule, get_wire_format
from sandbox.wire._base import BASE58
from sandbox.wire._sse import SSEEvent, iter_sse
from sandbox.wire.anthropic import WIRE, Anthropic

MODEL = "claude-haiku-4-5-20251001"
WEATHER = Tool(
    "get_weather",
    "Get current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
WEATHER_WIRE = {"name": WEATHER.name, "description": WEATHER.description, "input_schema": WEATHER.parameters}
CALL_ID = "toolu_01NGuJD7Pku4wqQzegRiBDyH"

# Reference A.3: the documented round trip (request 2) and response 1.
ROUND_TRIP_BODY = {
    "model": MODEL,
    "max_tokens": 1024,
    "system": "You are terse.",
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": CALL_ID, "name": "get_weather", "input": {"city": "Paris"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": CALL_ID, "content": "72F, sunny"},
                {"type": "text", "text": "Answer in one line."},
            ],
        },
    ],
    "tools": [WEATHER_WIRE],
    "tool_choice": {"type": "auto"},
}
RESPONSE_1: dict[str, Any] = {
    "model": MODEL,
    "id": "msg_01WHRa8Ez2u3AHvd3iBZUY9B",
    "type": "message",
    "role": "assistant",
    "content": [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": CALL_ID, "name": "get_weather", "input": {"city": "Paris"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 677,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": 33,
        "service_tier": "standard",
    },
}
# Reference A.4: the captured tool-call stream (C3), byte for byte, ping with its space included.
C3_STREAM = (
    b'event: message_start\ndata: {"type":"message_start","message":{"model":"claude-haiku-4-5-20251001",'
    b'"id":"msg_01WHRa8Ez2u3AHvd3iBZUY9B","type":"message","role":"assistant","content":[],"stop_reason":null,'
    b'"stop_sequence":null,"usage":{"input_tokens":677,"cache_creation_input_tokens":0,'
    b'"cache_read_input_tokens":0,"output_tokens":16}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use",'
    b'"id":"toolu_01NGuJD7Pku4wqQzegRiBDyH","name":"get_weather","input":{}}}\n\n'
    b'event: ping\ndata: {"type": "ping"}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"input_json_delta","partial_json":""}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"input_json_delta","partial_json":"{\\"city"}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"input_json_delta","partial_json":"\\": \\"Paris\\"}"}}\n\n'
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},'
    b'"usage":{"input_tokens":677,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":33}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)
E1 = (
    "messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately after: {ids}. "
    "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
)
E2 = (
    "messages.{n}.content.{k}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. "
    "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
)


# -- helpers -----------------------------------------------------------------------------------------


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def use(call_id: str, city: str = "Paris") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "get_weather", "input": {"city": city}}


def result(call_id: str, content: Any = "18C", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, **extra}


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


ASK = {"role": "user", "content": "Weather in Paris?"}


def body(messages: list[Any], **extra: Any) -> bytes:
    fields: dict[str, Any] = {"model": MODEL, "max_tokens": 1024, "messages": messages, "tools": [WEATHER_WIRE]}
    fields.update(extra)
    return json.dumps({key: value for key, value in fields.items() if value is not ...}).encode()


def parse(raw: bytes) -> Conversation:
    return WIRE.parse_request(raw, path_model=None, path_stream=False)


def rejection(raw: bytes) -> ErrorResponse:
    with pytest.raises(ErrorResponse) as caught:
        parse(raw)
    return caught.value


def tool_turn(*cities: str, seed: str = "weather/0", prose: str = "") -> ModelTurn:
    calls = [ToolCall(WIRE.call_id(f"{seed}/{i}"), "get_weather", {"city": c}) for i, c in enumerate(cities)]
    parts: list[Text | ToolCall] = [Text(prose)] if prose else []
    return ModelTurn(Message("assistant", [*parts, *calls]), StopReason.TOOL_USE, seed, usage=Usage(677, 33))


def text_turn(prose: str = "It's 18°C and sunny in Paris.", seed: str = "weather/1") -> ModelTurn:
    return ModelTurn(Message("assistant", [Text(prose)]), StopReason.END_TURN, seed, usage=Usage(700, 12))


def conversation(**raw: Any) -> Conversation:
    return Conversation(model=MODEL, messages=[], paths=[], raw=raw)


def decode_stream(chunks: Iterable[bytes]) -> list[StreamEvent]:
    decoder = WIRE.stream_decoder()
    events: list[StreamEvent] = []
    for event in iter_sse(chunks):
        events += decoder.feed(event)
    return events + decoder.finish()


def rebuild(events: list[StreamEvent]) -> tuple[str, list[ToolCall], MessageEnd]:
    """What a learner's loop does with the events: the text, then each call's joined arguments."""
    starts = {e.index: e for e in events if isinstance(e, ToolCallStart)}
    joined = {i: "".join(e.arguments for e in events if isinstance(e, ToolCallDelta) and e.index == i) for i in starts}
    assert sorted(e.index for e in events if isinstance(e, ToolCallEnd)) == sorted(starts)
    calls = [ToolCall(s.id, s.name, json.loads(joined[i] or "{}")) for i, s in sorted(starts.items())]
    assert isinstance(events[-1], MessageEnd)
    return "".join(e.text for e in events if isinstance(e, TextDelta)), calls, events[-1]


def sse(*payloads: dict[str, Any]) -> list[SSEEvent]:
    return [SSEEvent(str(payload["type"]), json.dumps(payload)) for payload in payloads]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=16,
)
KEYS = st.sampled_from(
    [
        "type",
        "index",
        "delta",
        "content_block",
        "message",
        "usage",
        "text",
        "partial_json",
        "id",
        "name",
        "input",
        "stop_reason",
        "output_tokens",
        "content",
        "error",
    ]
)
JSON_OBJECTS = st.dictionaries(KEYS, JSON, max_size=5)
START = {
    "type": "message_start",
    "message": {"id": "msg_1", "model": MODEL, "usage": {"input_tokens": 5, "output_tokens": 1}},
}


# -- registry ----------------------------------------------------------------------------------------


def test_registry_serves_anthropic_at_the_real_url() -> None:
    wire = get_wire_format("anthropic")
    assert wire is WIRE and isinstance(wire, Anthropic)
    assert (wire.name, wire.base_url, wire.has_call_ids) == ("anthropic", "https://api.anthropic.com", True)


# -- client side: encode_request ---------------------------------------------------------------------


def test_encode_request_matches_the_documented_round_trip() -> None:
    request = Request(
        model=MODEL,
        system="You are terse.",
        messages=[
            user_text("Weather in Paris?"),
            Message("assistant", [Text("Let me check."), ToolCall(CALL_ID, "get_weather", {"city": "Paris"})]),
            tool_result_message(CALL_ID, "72F, sunny"),
            user_text("Answer in one line."),
        ],
        tools=[WEATHER],
        tool_choice="auto",
    )
    encoded = WIRE.encode_request(request, stream=False, api_key="sk-ant-test")
    assert (encoded.method, encoded.path) == ("POST", "/v1/messages")
    assert encoded.headers == {
        "x-api-key": "sk-ant-test",
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
    }
    assert encoded.json == ROUND_TRIP_BODY


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        ("get_weather", {"type": "tool", "name": "get_weather"}),
    ],
    ids=["auto", "none", "required-is-any", "forced-name"],
)
def test_encode_request_tool_choice_variants(given: str, expected: dict[str, str]) -> None:
    request = Request(model=MODEL, messages=[user_text("hi")], tools=[WEATHER], tool_choice=given)
    assert WIRE.encode_request(request, stream=False, api_key=None).json["tool_choice"] == expected


def test_encode_request_merges_tool_results_into_one_user_turn_with_is_error() -> None:
    request = Request(
        model=MODEL,
        messages=[
            user_text("Paris and Rome?"),
            Message(
                "assistant",
                [
                    ToolCall("toolu_a", "get_weather", {"city": "Paris"}),
                    ToolCall("toolu_b", "get_weather", {"city": "Rome"}),
                ],
            ),
            tool_result_message("toolu_a", "18C"),
            tool_result_message("toolu_b", "timeout", is_error=True),
        ],
        tools=[WEATHER],
    )
    messages = WIRE.encode_request(request, stream=False, api_key=None).json["messages"]
    assert len(messages) == 3
    assert messages[2] == user(result("toolu_a"), result("toolu_b", "timeout", is_error=True))


def test_encode_request_folds_system_messages_and_passes_options_through() -> None:
    request = Request(
        model=MODEL,
        system="You are terse.",
        messages=[system_text("Use metric units."), user_text("hi"), Message("assistant", [Text(""), Text("Hello")])],
        temperature=0.2,
        stop_sequences=["END"],
    )
    encoded = WIRE.encode_request(request, stream=True, api_key=None)
    assert "x-api-key" not in encoded.headers
    assert encoded.json["system"] == "You are terse.\n\nUse metric units."
    assert encoded.json["messages"] == [{"role": "user", "content": "hi"}, assistant(text("Hello"))]
    assert {k: encoded.json[k] for k in ("stream", "temperature", "stop_sequences")} == {
        "stream": True,
        "temperature": 0.2,
        "stop_sequences": ["END"],
    }
    assert "tools" not in encoded.json and "tool_choice" not in encoded.json


def test_encode_request_matches_what_the_official_sdk_sends() -> None:
    """The SDK is the independent judge: the same conversation must give the same JSON."""
    sent: list[Any] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        return httpx2.Response(200, json=RESPONSE_1)

    client = anthropic.Anthropic(
        api_key="k",
        base_url="http://test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    fields = {key: value for key, value in ROUND_TRIP_BODY.items() if key != "model"}
    client.messages.create(model=MODEL, **fields)  # type: ignore[call-overload]
    request = Request(
        model=MODEL,
        system="You are terse.",
        tools=[WEATHER],
        tool_choice="auto",
        messages=[
            user_text("Weather in Paris?"),
            Message("assistant", [Text("Let me check."), ToolCall(CALL_ID, "get_weather", {"city": "Paris"})]),
            tool_result_message(CALL_ID, "72F, sunny"),
            user_text("Answer in one line."),
        ],
    )
    assert WIRE.encode_request(request, stream=False, api_key=None).json == sent[0]


# -- client side: decode_response, decode_error ------------------------------------------------------


def test_decode_response_reads_the_documented_tool_use_body() -> None:
    response = WIRE.decode_response(RESPONSE_1)
    assert response.message == Message(
        "assistant", [Text("Let me check."), ToolCall(CALL_ID, "get_weather", {"city": "Paris"})]
    )
    assert (response.stop_reason, response.usage) == (StopReason.TOOL_USE, Usage(677, 33))
    assert (response.model, response.id, response.raw) == (MODEL, "msg_01WHRa8Ez2u3AHvd3iBZUY9B", RESPONSE_1)


@pytest.mark.parametrize(
    ("wire_reason", "expected"),
    [
        ("end_turn", StopReason.END_TURN),
        ("tool_use", StopReason.TOOL_USE),
        ("max_tokens", StopReason.MAX_TOKENS),
        ("stop_sequence", StopReason.STOP_SEQUENCE),
        ("refusal", StopReason.REFUSAL),
        ("pause_turn", StopReason.OTHER),
        ("model_context_window_exceeded", StopReason.OTHER),
    ],
)
def test_decode_response_maps_stop_reasons(wire_reason: str, expected: StopReason) -> None:
    assert WIRE.decode_response({**RESPONSE_1, "stop_reason": wire_reason}).stop_reason is expected


def test_decode_response_skips_blocks_the_neutral_model_has_no_place_for() -> None:
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    response = WIRE.decode_response({**RESPONSE_1, "content": [thinking, *RESPONSE_1["content"]]})
    assert response.tool_calls() == [ToolCall(CALL_ID, "get_weather", {"city": "Paris"})]


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([RESPONSE_1], r"response body is not a JSON object"),
        ({**RESPONSE_1, "content": None}, r"response\.content should be a list, got None"),
        ({**RESPONSE_1, "content": ["hi"]}, r"response\.content\[0\] is not an object"),
        (
            {**RESPONSE_1, "content": [{"type": "tool_use", "id": "toolu_x", "name": "get_weather", "input": "{}"}]},
            r"arguments of tool call 'toolu_x' \(get_weather\) are not a JSON object",
        ),
        ({**RESPONSE_1, "usage": {"input_tokens": 1}}, r"response\.usage\.output_tokens should be an integer"),
        ({**RESPONSE_1, "stop_reason": None}, r"response\.stop_reason should be a string"),
    ],
    ids=["not-object", "no-content", "block-not-object", "input-not-object", "no-output-tokens", "no-stop"],
)
def test_decode_response_has_clear_error(data: Any, match: str) -> None:
    with pytest.raises(ProviderError, match=match) as caught:
        WIRE.decode_response(data)
    assert (caught.value.status, caught.value.provider) == (200, "anthropic")
    assert str(caught.value).startswith("anthropic 200: Anthropic sent output that is not the Messages API format")


def test_decode_error_keeps_the_captured_message_verbatim() -> None:
    captured = {  # CAP C1, the exact live body
        "type": "error",
        "error": {"type": "invalid_request_error", "message": E1.format(n=1, ids="call_1")},
        "request_id": "req_011Cak2XdJgnzxKCY2BC2Beh",
    }
    error = WIRE.decode_error(400, json.dumps(captured).encode())
    assert (error.message, error.status, error.error_type, error.body) == (
        E1.format(n=1, ids="call_1"),
        400,
        "invalid_request_error",
        captured,
    )
    assert str(error) == "anthropic 400 invalid_request_error: " + E1.format(n=1, ids="call_1")


def test_decode_error_keeps_a_non_envelope_body_as_text() -> None:
    error = WIRE.decode_error(502, b"<html>Bad Gateway</html>\n")
    assert (error.message, error.status, error.error_type) == ("<html>Bad Gateway</html>", 502, "")
    assert WIRE.decode_error(503, b"").message == "HTTP 503 with an empty body"
    assert WIRE.decode_error(500, b"[" * 100_000).status == 500  # too deep for json: still just text


# -- client side: streams ----------------------------------------------------------------------------


def test_stream_decoder_reads_the_captured_tool_call_stream() -> None:
    events = decode_stream([C3_STREAM])
    assert events == [
        ToolCallStart(0, CALL_ID, "get_weather"),
        ToolCallDelta(0, '{"city'),
        ToolCallDelta(0, '": "Paris"}'),
        ToolCallEnd(0),
        MessageEnd(StopReason.TOOL_USE, Usage(677, 33), MODEL, "msg_01WHRa8Ez2u3AHvd3iBZUY9B"),
    ]


def test_stream_decoder_reads_the_captured_stream_one_byte_at_a_time() -> None:
    chunks = [C3_STREAM[i : i + 1] for i in range(len(C3_STREAM))]
    assert decode_stream(chunks) == decode_stream([C3_STREAM])


def test_stream_decoder_numbers_calls_by_position_not_block_index() -> None:
    """Text is block 0 and the tools blocks 1 and 2; the calls are 0 and 1 (CAP C4 anthropic-tool-no-args)."""
    events = [
        *sse(START, {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        *sse(
            *(
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}
                for t in ("Checking", " both.")
            )
        ),
        *sse({"type": "content_block_stop", "index": 0}),
        *sse(
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_a", "name": "now", "input": {}},
            }
        ),
        *sse({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        *sse({"type": "content_block_stop", "index": 1}),
        *sse(
            {
                "type": "content_block_start",
                "index": 2,
                "content_block": {"type": "tool_use", "id": "toolu_b", "name": "get_weather", "input": {}},
            }
        ),
        *sse(
            *(
                {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": p}}
                for p in ("", '{"ci', 'ty":', ' "Rome"}')
            )
        ),
        *sse({"type": "content_block_stop", "index": 2}),
        *sse({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 40}}),
        *sse({"type": "message_stop"}),
    ]
    decoder = WIRE.stream_decoder()
    decoded = [out for event in events for out in decoder.feed(event)] + decoder.finish()
    prose, calls, end = rebuild(decoded)
    assert prose == "Checking both."
    assert calls == [ToolCall("toolu_a", "now", {}), ToolCall("toolu_b", "get_weather", {"city": "Rome"})]
    assert not [e for e in decoded if isinstance(e, ToolCallDelta) and e.arguments == ""]
    assert end == MessageEnd(StopReason.TOOL_USE, Usage(5, 40), MODEL, "msg_1")


@pytest.mark.parametrize(
    ("events", "match"),
    [
        (
            sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            r"sent 'content_block_start' before message_start",
        ),
        ([SSEEvent("message_start", "{not json")], r"data of a message_start event is not JSON"),
        (
            sse({"type": "message_start", "message": {"id": "m", "model": MODEL}}),
            r"message_start\.message\.usage should be an object",
        ),
        (
            sse(START, {"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "x"}}),
            r"content_block_delta for content block 3, which is not open",
        ),
        (
            sse(
                START,
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "tool_use", "id": "toolu_x", "name": "get_weather", "input": {}},
                },
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": '{"ci'},
                },
                {"type": "content_block_stop", "index": 0},
            ),
            r"arguments of tool call 'toolu_x' \(get_weather\) are not valid JSON: '\{\"ci'",
        ),
        (
            sse(START, {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}}),
            r"message_delta\.usage\.output_tokens should be an integer",
        ),
        (sse(START, {"type": "message_stop"}), r"message_stop before any message_delta gave a stop_reason"),
    ],
    ids=[
        "no-message-start",
        "bad-json",
        "no-usage",
        "unknown-block",
        "bad-arguments",
        "no-output-tokens",
        "no-stop-reason",
    ],
)
def test_stream_decoder_has_clear_error(events: list[SSEEvent], match: str) -> None:
    decoder = WIRE.stream_decoder()
    with pytest.raises(ProviderError, match=match) as caught:
        for event in events:
            decoder.feed(event)
    assert (caught.value.status, caught.value.provider) == (200, "anthropic")


def test_stream_decoder_raises_the_error_event_as_the_provider_error() -> None:
    decoder = WIRE.stream_decoder()
    decoder.feed(sse(START)[0])
    event = SSEEvent("error", '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}')
    with pytest.raises(ProviderError, match=r"^anthropic 529 overloaded_error: Overloaded$"):
        decoder.feed(event)


def test_stream_decoder_finish_has_clear_error_when_the_stream_was_cut() -> None:
    cut = C3_STREAM[: C3_STREAM.index(b"event: message_delta")]
    with pytest.raises(ProviderError, match=r"stream ended before the turn was complete \(no message_stop\)"):
        decode_stream([cut])
    with pytest.raises(ProviderError, match=r"\(no events at all\)"):
        WIRE.stream_decoder().finish()


EVENT_NAMES = st.sampled_from(
    [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "error",
        "ping",
        "future_event",
    ]
)


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(EVENT_NAMES, JSON_OBJECTS), max_size=4), JSON_OBJECTS)
def test_decoders_never_raise_an_internal_error_on_malformed_output(
    events: list[tuple[str, dict[str, Any]]], data: dict[str, Any]
) -> None:
    decoder = WIRE.stream_decoder()
    try:
        for name, payload in [("message_start", START), *events]:
            decoder.feed(SSEEvent(name, json.dumps(payload)))
        decoder.finish()
    except ProviderError as error:
        assert error.provider == "anthropic"
    try:
        WIRE.decode_response({**RESPONSE_1, **data})
    except ProviderError as error:
        assert error.provider == "anthropic"


def test_stream_decoder_skips_pings_and_event_types_it_does_not_know() -> None:
    """Anthropic documents that new event types may appear; a client must ignore them."""
    decoder = WIRE.stream_decoder()
    assert decoder.feed(SSEEvent("ping", '{"type": "ping"}')) == []
    decoder.feed(sse(START)[0])
    assert decoder.feed(SSEEvent("future_event", '{"type": "future_event"}')) == []


# -- fake side: parse_request ------------------------------------------------------------------------


def test_parse_request_reads_the_documented_round_trip() -> None:
    parsed = parse(json.dumps(ROUND_TRIP_BODY).encode())
    assert parsed.messages == [
        system_text("You are terse."),
        user_text("Weather in Paris?"),
        Message("assistant", [Text("Let me check."), ToolCall(CALL_ID, "get_weather", {"city": "Paris"})]),
        tool_result_message(CALL_ID, "72F, sunny"),
        user_text("Answer in one line."),
    ]
    assert parsed.paths == ["system", "messages[0]", "messages[1]", "messages[2]", "messages[2]"]
    assert (parsed.model, parsed.tools, parsed.tool_choice, parsed.stream) == (MODEL, [WEATHER], "auto", False)
    assert parsed.raw == ROUND_TRIP_BODY


def test_parse_request_splits_a_turn_of_results_into_tool_messages() -> None:
    """One neutral tool message per result in wire order; list content joined; is_error kept."""
    parsed = parse(
        body(
            [
                ASK,
                assistant(use("toolu_a"), use("toolu_b", "Rome")),
                user(
                    result("toolu_a", [text("18C"), text("clear")]),
                    result("toolu_b", "timeout", is_error=True),
                    {"type": "image", "source": {"type": "url", "url": "https://x"}},
                ),
            ],
            stream=True,
        )
    )
    assert parsed.messages[2:] == [
        Message("tool", [ToolResult("toolu_a", "18C\nclear")]),
        Message("tool", [ToolResult("toolu_b", "timeout", is_error=True)]),
        Message("user", []),
    ]
    assert parsed.paths[2:] == ["messages[2]"] * 3 and parsed.stream


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, "auto"),
        ({"type": "any"}, "required"),
        ({"type": "none"}, "none"),
        ({"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True}, "get_weather"),
    ],
    ids=["auto", "any", "none", "tool"],
)
def test_parse_request_normalises_tool_choice(choice: dict[str, Any], expected: str) -> None:
    parsed = parse(body([ASK], tool_choice=choice))
    assert parsed.tool_choice == expected and parsed.forced_tool_choice == (expected not in ("auto", "none"))


def test_parse_request_accepts_what_the_current_api_accepts() -> None:
    """Assistant first, consecutive same-role turns merged (CAP C2), unknown keys inside a message
    ignored, server tools beside custom ones, a system-role message, an empty final prefill."""
    parsed = parse(
        body(
            [
                assistant(text("Let me look.")),
                assistant(use("call_1")),
                {"role": "user", "content": [result("call_1")], "name": "ignored"},
                user(text("Thanks, now Rome.")),
                {"role": "system", "content": "Be brief."},
                {"role": "assistant", "content": ""},
            ],
            tools=[WEATHER_WIRE, {"type": "web_search_20250305", "name": "web_search"}],
        )
    )
    assert [m.role for m in parsed.messages] == ["assistant", "assistant", "tool", "user", "system", "assistant"]
    assert parsed.tools == [WEATHER]


def bad(raw: bytes, message: str) -> tuple[bytes, str]:
    return raw, message


SCHEMA_CASES = [
    bad(b'{"model": ', "The request body is not valid JSON: unexpected end of data: line 1 column 11 (char 10)"),
    bad(b'{"model"\n "x"}', "The request body is not valid JSON: unexpected character: line 2 column 2 (char 10)"),
    bad(
        b'{"a": "\\ud83d"}',
        "The request body is not valid JSON: no low surrogate in string: line 1 column 14 (char 13)",
    ),
    bad(b"", "The request body is not valid JSON: Input is a zero-length, empty document: line 1 column 1 (char 0)"),
    bad(b"[]", "Input should be a valid dictionary"),
    bad(json.dumps({"messages": [ASK], "max_tokens": 5}).encode(), "model: Field required"),
    bad(json.dumps({"model": MODEL, "messages": [ASK]}).encode(), "max_tokens: Field required"),
    bad(
        body([ASK], max_tokens=2.5), "max_tokens: Input should be a valid integer, got a number with a fractional part"
    ),
    bad(body([]), "messages: at least one message is required"),
    bad(body({"role": "user"}), "messages: Input should be a valid list"),
    bad(body([{"role": "user", "content": {"text": "hi"}}]), "messages.0.content: Input should be a valid list"),
    bad(body([{"role": "tool", "content": "hi"}]), "messages.0.role: Input should be 'user', 'assistant' or 'system'"),
    bad(body([{"content": "hi"}]), "messages.0.role: Field required"),
    bad(body([user({"text": "hi"})]), "messages.0.content.0: Unable to extract tag using discriminator 'type'"),
    bad(
        body([user(text("hi"), {"type": "input_text", "text": "hi"})]),
        "messages.0.content.1: Input tag 'input_text' found using 'type' does not match any of the expected tags: "
        "'text', 'image', 'document', 'search_result', 'thinking', 'redacted_thinking', 'tool_use', 'tool_result', "
        "'server_tool_use', 'web_search_tool_result', 'web_fetch_tool_result', 'code_execution_tool_result', "
        "'bash_code_execution_tool_result', 'text_editor_code_execution_tool_result', 'tool_search_tool_result', "
        "'container_upload'",
    ),
    bad(
        body([ASK, assistant(use("call 1"))]),
        "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
    ),
    bad(
        body([ASK, assistant({"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": '{"city": 1}'})]),
        "messages.1.content.0.tool_use.input: Input should be a valid dictionary",
    ),
    bad(body([user({"type": "tool_result"})]), "messages.0.content.0.tool_result.tool_use_id: Field required"),
    bad(
        body([ASK], tools=[{"type": "function", "function": {"name": "get_weather"}}]),
        "tools.0: Input tag 'function' found using 'type' does not match any of the expected tags: "
        "'bash_20250124', 'custom', 'text_editor_20250124', 'text_editor_20250429', 'text_editor_20250728', "
        "'web_search_20250305'",
    ),
    bad(
        body([ASK], tools=[{**WEATHER_WIRE, "name": "get weather"}]),
        "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'",
    ),
    bad(body([ASK], tools=[{"name": "get_weather"}]), "tools.0.custom.input_schema: Field required"),
    bad(body([ASK], tools=[WEATHER_WIRE, WEATHER_WIRE]), "tools: Tool names must be unique."),
    bad(
        body([ASK], tool_choice="auto"),
        "tool_choice: Input should be a valid dictionary or object to extract fields from",
    ),
    bad(
        body([ASK], tool_choice={"type": "required"}),
        "tool_choice: Input tag 'required' found using 'type' does not match any of the expected tags: "
        "'auto', 'any', 'tool', 'none'",
    ),
    bad(body([ASK], system=[{"text": "Be terse."}]), "system.0.type: Field required"),
    bad(body([ASK], stream="maybe"), "stream: Input should be a valid boolean, unable to interpret input"),
    bad(body([ASK], response_format={"type": "json"}), "response_format: Extra inputs are not permitted"),
]


@pytest.mark.parametrize(("raw", "message"), SCHEMA_CASES, ids=[m[1][:48] for m in SCHEMA_CASES])
def test_parse_request_schema_mistake_has_clear_error(raw: bytes, message: str) -> None:
    error = rejection(raw)
    assert (error.status, error.message, error.rule, error.message_index) == (400, message, Rule.MALFORMED, None)
    assert json.loads(error.body)["error"] == {"type": "invalid_request_error", "message": message}


def test_error_envelope_matches_the_captured_shape_and_headers() -> None:
    error = rejection(body([ASK, assistant(use("call_1"))]))
    data = json.loads(error.body)
    assert list(data) == ["type", "error", "request_id"] and data["type"] == "error"
    assert list(data["error"]) == ["type", "message"]
    request_id = data["request_id"]
    assert request_id.startswith("req_011C") and len(request_id) == 28
    assert set(request_id[8:]) <= set(BASE58)
    assert error.headers == {"content-type": "application/json", "request-id": request_id, "x-should-retry": "false"}
    assert rejection(body([ASK, assistant(use("call_1"))])).body == error.body  # deterministic


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (401, "authentication_error"),
        (404, "not_found_error"),
        (413, "request_too_large"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (529, "overloaded_error"),
        (418, "invalid_request_error"),
    ],
)
def test_error_uses_the_documented_type_for_each_status(status: int, kind: str) -> None:
    error = WIRE.error(status, "boom", rule=Rule.BUDGET, param="model", code="x", message_index=2)
    assert json.loads(error.body)["error"] == {"type": kind, "message": "boom"}
    assert (error.status, error.rule, error.message_index) == (status, Rule.BUDGET, 2)


ORDER_CASES = [
    pytest.param(  # CAP C1: the exact request and message from the live API
        [assistant(use("call_1"), text("Done.")), user(result("call_1")), user(text("And now?"))],
        E1.format(n=1, ids="call_1"),
        Rule.MISSING_RESULT,
        0,
        id="E1-text-after-tool-use-C1",
    ),
    pytest.param(  # trigger (a): the loop moved on without results
        [ASK, assistant(use("toolu_a")), user(text("Never mind."))],
        E1.format(n=1, ids="toolu_a"),
        Rule.MISSING_RESULT,
        1,
        id="E1-no-results",
    ),
    pytest.param(  # trigger (c): text placed before the results
        [ASK, assistant(use("toolu_a")), user(text("Reminder."), result("toolu_a"))],
        E1.format(n=1, ids="toolu_a"),
        Rule.MISSING_RESULT,
        2,
        id="E1-text-before-results",
    ),
    pytest.param(  # trigger (d): only some of the parallel calls answered; the others listed
        [ASK, assistant(use("toolu_a"), use("toolu_b"), use("toolu_c")), user(result("toolu_b"))],
        E1.format(n=1, ids="toolu_a, toolu_c"),
        Rule.MISSING_RESULT,
        1,
        id="E1-partial",
    ),
    pytest.param(  # the request ends on the calls
        [ASK, assistant(use("toolu_a"))], E1.format(n=1, ids="toolu_a"), Rule.MISSING_RESULT, 1, id="E1-ends-on-calls"
    ),
    pytest.param(  # CAP C4 parallel-provider-client-tools: a server block after the client tool_use
        [
            ASK,
            assistant(
                use("toolu_issue8112_custom"),
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            ),
            user(result("toolu_issue8112_custom")),
        ],
        E1.format(n=1, ids="toolu_issue8112_custom"),
        Rule.MISSING_RESULT,
        1,
        id="E1-server-block-after",
    ),
    pytest.param(  # CAP C4 issue-21832: a result in the first message
        [user(text("hi"), result("T1"))],
        E2.format(n=0, k=1, id="T1"),
        Rule.RESULT_WITHOUT_TURN,
        0,
        id="E2-first-message-C4",
    ),
    pytest.param(  # the lesson's DON'T: the assistant turn rebuilt as text
        [ASK, assistant(text("Let me check.")), user(result("toolu_a"))],
        E2.format(n=2, k=0, id="toolu_a"),
        Rule.RESULT_WITHOUT_TURN,
        2,
        id="E2-turn-rebuilt-as-text",
    ),
    pytest.param(
        [ASK, assistant(use("toolu_a")), user(result("toolu_a"), result("toolu_zzz"))],
        E2.format(n=2, k=1, id="toolu_zzz"),
        Rule.UNKNOWN_CALL_ID,
        3,
        id="E2-unknown-id",
    ),
    pytest.param(
        [ASK, assistant(use("toolu_a")), user(result("toolu_a"), result("toolu_a"))],
        "messages.2.content.1: each tool_use must have a single result. Found multiple `tool_result` blocks "
        "with id: toolu_a",
        Rule.DUPLICATE_RESULT,
        3,
        id="duplicate-result",
    ),
    pytest.param(  # the same assistant turn appended twice
        [ASK, assistant(use("toolu_a")), assistant(use("toolu_a")), user(result("toolu_a"))],
        "messages.2.content.0: `tool_use` ids must be unique",
        Rule.DUPLICATE_TURN,
        2,
        id="tool-use-ids-unique",
    ),
    pytest.param(
        [ASK, {"role": "assistant", "content": []}, user(text("hi"))],
        "messages.1: all messages must have non-empty content except for the optional final assistant message",
        Rule.MALFORMED,
        1,
        id="empty-content",
    ),
    pytest.param(
        [ASK, assistant(text(""))],
        "messages: text content blocks must be non-empty",
        Rule.MALFORMED,
        1,
        id="empty-text-block",
    ),
]


@pytest.mark.parametrize(("messages", "message", "rule", "index"), ORDER_CASES)
def test_parse_request_ordering_mistake_has_clear_error(
    messages: list[Any], message: str, rule: Rule, index: int
) -> None:
    error = rejection(body(messages))
    assert (error.status, error.message, error.rule, error.message_index) == (400, message, rule, index)


def test_parse_request_requires_tools_when_the_history_has_tool_blocks() -> None:
    error = rejection(body([ASK, assistant(use("toolu_a")), user(result("toolu_a"))], tools=...))
    assert error.message == "Requests which include `tool_use` or `tool_result` blocks must define tools."
    assert error.rule is Rule.MALFORMED


def test_parse_request_checks_the_schema_before_the_ordering_rules() -> None:
    raw = body([ASK, assistant(use("toolu_a")), user(text("no results"))], max_tokens="lots")
    assert rejection(raw).message == "max_tokens: Input should be a valid integer, unable to parse string as an integer"


VALID = json.loads(
    body(
        [
            ASK,
            assistant(text("Checking."), use("toolu_a"), use("toolu_b")),
            user(result("toolu_a", [text("18C")]), result("toolu_b", is_error=True)),
            user(text("Thanks.")),
        ],
        system=[text("Be terse.")],
        tool_choice={"type": "auto"},
        stream=True,
    )
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, child in children:
        found += paths(child, (*prefix, key))
    return found


def mutate(document: Any, path: tuple[Any, ...], replacement: Any, delete: bool) -> Any:
    copy = json.loads(json.dumps(document))
    if not path:
        return replacement
    parent = copy
    for key in path[:-1]:
        parent = parent[key]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = replacement
    return copy


def parses_or_rejects(raw: bytes) -> None:
    try:
        parse(raw)
    except ErrorResponse as error:
        assert error.status == 400 and json.loads(error.body)["error"]["message"] == error.message


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON)
def test_parse_request_never_raises_an_internal_error_on_any_json(value: Any) -> None:
    parses_or_rejects(json.dumps(value).encode())


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(paths(VALID)), JSON, st.booleans())
def test_parse_request_never_raises_an_internal_error_on_a_mutated_valid_body(
    path: tuple[Any, ...], replacement: Any, delete: bool
) -> None:
    parses_or_rejects(json.dumps(mutate(VALID, path, replacement, delete and bool(path))).encode())


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64) | st.sampled_from([b'{"a": "\\udc00"}', b"[" * 5000, b"1" * 5000, b"NaN", b"\xff"]))
def test_parse_request_never_raises_an_internal_error_on_any_bytes(raw: bytes) -> None:
    parses_or_rejects(raw)


# -- fake side: encode_response, encode_stream -------------------------------------------------------


def test_encode_response_has_the_documented_shape_and_id_formats() -> None:
    turn = tool_turn("Paris", prose="Let me check.")
    data = WIRE.encode_response(turn, conversation())
    assert list(data) == ["model", "id", "type", "role", "content", "stop_reason", "stop_sequence", "usage"]
    assert (data["model"], data["type"], data["role"]) == (MODEL, "message", "assistant")
    assert data["stop_reason"] == "tool_use" and data["stop_sequence"] is None
    assert data["id"].startswith("msg_01") and len(data["id"]) == 28 and set(data["id"][6:]) <= set(BASE58)
    call_id = data["content"][1]["id"]
    assert call_id == WIRE.call_id("weather/0/0")
    assert call_id.startswith("toolu_01") and len(call_id) == 30 and set(call_id[8:]) <= set(BASE58)
    assert data["content"] == [text("Let me check."), use(call_id)]
    assert data["usage"]["input_tokens"] == 677 and data["usage"]["output_tokens"] == 33
    assert WIRE.decode_response(data).message == turn.message


@pytest.mark.parametrize(
    ("stop", "raw_stop", "expected"),
    [
        (StopReason.END_TURN, None, "end_turn"),
        (StopReason.MAX_TOKENS, None, "max_tokens"),
        (StopReason.REFUSAL, None, "refusal"),
        (StopReason.OTHER, None, "pause_turn"),
        (StopReason.END_TURN, "model_context_window_exceeded", "model_context_window_exceeded"),
    ],
)
def test_encode_response_stop_reason_is_faithful_or_verbatim(
    stop: StopReason, raw_stop: str | None, expected: str
) -> None:
    turn = ModelTurn(Message("assistant", [Text("x")]), stop, "s", raw_stop_reason=raw_stop)
    assert WIRE.encode_response(turn, conversation())["stop_reason"] == expected


def test_encode_response_names_the_matched_stop_sequence() -> None:
    turn = ModelTurn(Message("assistant", [Text("1, 2, 3")]), StopReason.STOP_SEQUENCE, "s")
    data = WIRE.encode_response(turn, conversation(stop_sequences=["END", "STOP"]))
    assert (data["stop_reason"], data["stop_sequence"]) == ("stop_sequence", "END")


def test_encode_response_has_clear_error_for_a_scripted_tool_result() -> None:
    turn = ModelTurn(Message("assistant", [ToolResult("toolu_a", "18C")]), StopReason.END_TURN, "s")
    with pytest.raises(UsageError, match=r"cannot hold a tool result .*Put the result in the conversation"):
        WIRE.encode_response(turn, conversation())


def test_encode_stream_follows_the_recorded_event_order() -> None:
    frames = WIRE.encode_stream(tool_turn("Paris", "Rome", prose="Checking both cities."), conversation())
    assert all(frame.endswith(b"\n\n") and frame.startswith(b"event: ") for frame in frames)
    events = list(iter_sse(frames))
    assert all(json.loads(e.data)["type"] == e.event for e in events)
    names = [e.event for e in events]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"] and names.count("content_block_stop") == 3
    data = [json.loads(e.data) for e in events]
    assert data[0]["message"]["content"] == [] and data[0]["message"]["stop_reason"] is None
    tool_starts = [d for d in data if d["type"] == "content_block_start" and d["content_block"]["type"] == "tool_use"]
    assert [d["content_block"]["input"] for d in tool_starts] == [{}, {}]
    first_deltas = [d["delta"] for d in data if d["type"] == "content_block_delta" and d["index"] == 1]
    assert first_deltas[0] == {"type": "input_json_delta", "partial_json": ""} and len(first_deltas) > 3
    assert data[-2]["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert data[-2]["usage"]["output_tokens"] == 33
    # 2026 streams (reference A.4 "Newer fields"): message_start usage breaks cache creation down and
    # names the service tier; message_delta carries the counts only.
    assert data[0]["message"]["usage"]["cache_creation"] == RESPONSE_1["usage"]["cache_creation"]
    assert data[0]["message"]["usage"]["service_tier"] == "standard"
    assert set(data[-2]["usage"]) == {
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "output_tokens",
    }


def test_encode_stream_decodes_back_to_the_scripted_turn() -> None:
    turn = tool_turn("Paris", "Rome", prose="Checking both cities.")
    prose, calls, end = rebuild(decode_stream(WIRE.encode_stream(turn, conversation())))
    assert Message("assistant", [Text(prose), *calls]) == turn.message
    message_id = WIRE.encode_response(turn, conversation())["id"]
    assert end == MessageEnd(StopReason.TOOL_USE, Usage(677, 33), MODEL, message_id)


def test_encode_stream_sends_a_zero_argument_call_as_one_empty_fragment() -> None:
    turn = ModelTurn(Message("assistant", [ToolCall(WIRE.call_id("t/0"), "now", {})]), StopReason.TOOL_USE, "t")
    deltas = [
        json.loads(e.data)["delta"]
        for e in iter_sse(WIRE.encode_stream(turn, conversation()))
        if e.event == "content_block_delta"
    ]
    assert deltas == [{"type": "input_json_delta", "partial_json": ""}]  # CAP C4 anthropic-tool-no-args


def test_encode_is_byte_identical_across_calls_and_processes() -> None:
    turn = tool_turn("Paris", prose="Let me check.")
    digest = hashlib.sha256(b"".join(WIRE.encode_stream(turn, conversation()))).hexdigest()
    assert b"".join(WIRE.encode_stream(turn, conversation())) == b"".join(WIRE.encode_stream(turn, conversation()))
    script = (
        "import hashlib; from sandbox.messages._types import *; from sandbox.wire import Conversation, ModelTurn;"
        "from sandbox.wire.anthropic import WIRE as W;"
        "c = [ToolCall(W.call_id('weather/0/0'), 'get_weather', {'city': 'Paris'})];"
        "t = ModelTurn(Message('assistant', [Text('Let me check.'), *c]), StopReason.TOOL_USE, 'weather/0',"
        " usage=Usage(677, 33));"
        f"print(hashlib.sha256(b''.join(W.encode_stream(t, Conversation(model={MODEL!r}, messages=[], paths=[]))))"
        ".hexdigest())"
    )
    other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert other.stdout.strip() == digest


# -- round trips ---------------------------------------------------------------------------------------

TEXTS = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=12)
ARGUMENTS = st.dictionaries(TEXTS, st.none() | st.booleans() | st.integers() | TEXTS, max_size=3)


@st.composite
def tool_loops(draw: st.DrawFn) -> list[Message]:
    """A user question, rounds of calls each answered in order (maybe with a note after the results),
    and a final answer: the histories a correct loop sends."""
    messages = [user_text(draw(TEXTS))]
    for round_number in range(draw(st.integers(0, 3))):
        ids = [f"toolu_{round_number}_{i}" for i in range(draw(st.integers(1, 3)))]
        prose = [Text(draw(TEXTS))] if draw(st.booleans()) else []
        calls = [ToolCall(call_id, draw(st.sampled_from(["get_weather", "now"])), draw(ARGUMENTS)) for call_id in ids]
        messages.append(Message("assistant", [*prose, *calls]))
        messages += [tool_result_message(call_id, draw(TEXTS), is_error=draw(st.booleans())) for call_id in ids]
        if draw(st.booleans()):
            messages.append(user_text(draw(TEXTS)))
    return [*messages, assistant_text(draw(TEXTS))]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(tool_loops())
def test_round_trip_client_to_fake_keeps_every_call_and_result_in_order(messages: list[Message]) -> None:
    request = Request(model=MODEL, messages=messages, tools=[WEATHER, Tool("now")], system="Be terse.")
    encoded = WIRE.encode_request(request, stream=False, api_key="k")
    parsed = parse(json.dumps(encoded.json).encode())
    assert parsed.messages == [system_text("Be terse."), *messages]
    assert [call.id for m in parsed.messages for call in m.tool_calls()] == [
        call.id for m in messages for call in m.tool_calls()
    ]


# -- the official SDK reads our output -----------------------------------------------------------------


def sdk(turns: list[ModelTurn]) -> tuple[anthropic.Anthropic, list[Conversation]]:
    """An official client whose transport is our fake side, answering `turns` in order."""
    seen: list[Conversation] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        # anthropic 2.14 sends `anthropic-version: 2026-10-21`; the fake, like the API, takes any version.
        assert request.url.path == "/v1/messages" and request.headers["anthropic-version"]
        try:
            parsed = parse(request.content)
        except ErrorResponse as error:
            return httpx2.Response(error.status, headers=error.headers, content=error.body)
        seen.append(parsed)
        turn = turns[len(seen) - 1]
        if parsed.stream:
            content = b"".join(WIRE.encode_stream(turn, parsed))
            return httpx2.Response(200, headers={"content-type": "text/event-stream; charset=utf-8"}, content=content)
        return httpx2.Response(200, json=WIRE.encode_response(turn, parsed))

    client = anthropic.Anthropic(
        api_key="sk-ant-test",
        base_url="http://test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
    )
    return client, seen


TOOLS: Any = [WEATHER_WIRE]


def sdk_loop(create: Callable[[list[Any]], Any]) -> tuple[Any, list[Any]]:
    """The loop SDK users write: append `message.content` as is, then the results."""
    messages: list[Any] = [ASK]
    first = create(messages)
    calls = [block for block in first.content if block.type == "tool_use"]
    messages.append({"role": "assistant", "content": first.content})
    messages.append(user(*(result(call.id, f"18C in {call.input['city']}") for call in calls)))
    return create(messages), messages


def test_sdk_create_parses_our_response_and_its_replay_is_accepted() -> None:
    turns = [tool_turn("Paris", "Rome", prose="Let me check."), text_turn()]
    client, seen = sdk(turns)
    final, _ = sdk_loop(
        lambda messages: client.messages.create(model=MODEL, max_tokens=1024, messages=messages, tools=TOOLS)
    )
    assert final.content[0].text == "It's 18°C and sunny in Paris." and final.stop_reason == "end_turn"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (700, 12)
    assert seen[1].messages[1] == turns[0].message  # the SDK's replay of our turn is our turn
    assert [m.tool_results()[0].content for m in seen[1].messages[2:]] == ["18C in Paris", "18C in Rome"]


def test_sdk_create_with_stream_true_yields_our_events_in_order() -> None:
    client, _ = sdk([tool_turn("Paris", prose="Let me check.")])
    stream = client.messages.create(model=MODEL, max_tokens=1024, messages=[ASK], tools=TOOLS, stream=True)
    events = list(stream)
    assert events[0].type == "message_start" and events[-1].type == "message_stop"
    fragments = [e.delta.partial_json for e in events if e.type == "content_block_delta" and e.index == 1]
    assert fragments[0] == "" and json.loads("".join(fragments)) == {"city": "Paris"}
    assert [e.usage.output_tokens for e in events if e.type == "message_delta"] == [33]


def test_sdk_stream_helper_builds_the_final_message_from_our_stream() -> None:
    turns = [tool_turn("Paris", "Rome", prose="Let me check."), text_turn()]
    client, seen = sdk(turns)

    def create(messages: list[Any]) -> Any:
        with client.messages.stream(model=MODEL, max_tokens=1024, messages=messages, tools=TOOLS) as stream:
            return stream.get_final_message()

    final, messages = sdk_loop(create)
    first = messages[1]["content"]
    assert [(b.type, getattr(b, "input", None)) for b in first] == [
        ("text", None),
        ("tool_use", {"city": "Paris"}),
        ("tool_use", {"city": "Rome"}),
    ]
    assert final.content[0].text == "It's 18°C and sunny in Paris." and final.stop_reason == "end_turn"
    assert seen[1].messages[1] == turns[0].message


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([ASK, assistant(use("toolu_a")), user(text("Never mind."))], E1.format(n=1, ids="toolu_a")),
        ([ASK, assistant(text("Let me check.")), user(result("toolu_a"))], E2.format(n=2, k=0, id="toolu_a")),
    ],
    ids=["E1", "E2"],
)
def test_sdk_ordering_mistake_raises_bad_request_with_our_verbatim_text(messages: list[Any], message: str) -> None:
    client, _ = sdk([])
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model=MODEL, max_tokens=1024, messages=messages, tools=TOOLS)
    error = caught.value
    assert (error.status_code, error.type, error.api_message) == (400, "invalid_request_error", message)
    assert error.request_id == error.response.headers["request-id"] == error.body["request_id"]  # type: ignore[index]
    with pytest.raises(anthropic.BadRequestError, match=r"tool_use"):
        with client.messages.stream(model=MODEL, max_tokens=1024, messages=messages, tools=TOOLS) as stream:
            stream.get_final_message()
