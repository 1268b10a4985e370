"""Gemini generateContent wire format: both sides, judged by the reference captures and google-genai."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox._exceptions import ProviderError
from sandbox.messages._events import MessageEnd, StreamEvent, TextDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from sandbox.messages._types import (
    Message,
    Reasoning,
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
from sandbox.skyl._collect import collect_stream
from sandbox.wire import Conversation, ErrorResponse, ModelTurn, Rule, get_wire_format, route
from sandbox.wire._sse import SSEEvent, iter_sse
from sandbox.wire.gemini import WIRE, Gemini
from sandbox.wire.gemini._validate import G1, G2, G3, MIXED, ROLE

MODEL = "gemini-2.5-flash"
WEATHER = Tool(
    "get_weather",
    "Get current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TIME = Tool("get_time", "Current time in a zone.", {"type": "object", "properties": {"tz": {"type": "string"}}})
SIGNATURE = base64.b64encode(b"opaque thought state").decode()

# Reference B.3, response 1 (CAP C5 shape).
RECORDED_CALL = {
    "candidates": [
        {
            "content": {
                "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}],
                "role": "model",
            },
            "finishReason": "STOP",
            "index": 0,
            "finishMessage": "Model generated function call(s).",
        }
    ],
    "usageMetadata": {
        "promptTokenCount": 29,
        "candidatesTokenCount": 15,
        "totalTokenCount": 44,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 29}],
    },
    "modelVersion": "gemini-2.5-flash",
    "responseId": "m36LaZGyCLz1xs0PtNSB-QU",
}

# Reference B.4: the 3P capture for gemini-2.5-pro, spacing as the server writes it, CRLF framing.
RECORDED_STREAM = (
    b'data: {"candidates": [{"content": {"parts": [{"text": "Let me check the weather for you."}],"role": "model"},'
    b'"index": 0}],"usageMetadata": {"promptTokenCount": 60,"candidatesTokenCount": 41,"totalTokenCount": 106,'
    b'"promptTokensDetails": [{"modality": "TEXT","tokenCount": 60}],"thoughtsTokenCount": 5},'
    b'"modelVersion": "gemini-2.5-pro"}\r\n\r\n'
    b'data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "get_weather","args": '
    b'{"location": "Paris"}}}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": '
    b'{"promptTokenCount": 60,"candidatesTokenCount": 47,"totalTokenCount": 112,"promptTokensDetails": '
    b'[{"modality": "TEXT","tokenCount": 60}],"thoughtsTokenCount": 5},"modelVersion": "gemini-2.5-pro"}\r\n\r\n'
)


def body(contents: list[dict[str, Any]], **extra: Any) -> bytes:
    return json.dumps({"contents": contents, **extra}).encode()


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def calls(*names: str) -> dict[str, Any]:
    return {"role": "model", "parts": [{"functionCall": {"name": name, "args": {}}} for name in names]}


def answers(*names: str) -> dict[str, Any]:
    parts = [{"functionResponse": {"name": name, "response": {"result": "ok"}}} for name in names]
    return {"role": "user", "parts": parts}


def parse(raw: bytes, *, stream: bool = False) -> Conversation:
    return WIRE.parse_request(raw, path_model=MODEL, path_stream=stream)


def rejection(raw: bytes) -> ErrorResponse:
    with pytest.raises(ErrorResponse) as info:
        parse(raw)
    return info.value


def conversation(**overrides: Any) -> Conversation:
    return Conversation(model=MODEL, messages=[user_text("hi")], paths=["contents[0]"], **overrides)


def call_turn(seed: str = "weather/0", **overrides: Any) -> ModelTurn:
    message = Message(
        "assistant",
        [Text("Let me check."), ToolCall("p0", "get_weather", {"city": "Paris"}), ToolCall("p1", "get_time", {})],
    )
    return ModelTurn(message, StopReason.TOOL_USE, seed=seed, usage=Usage(20, 7), **overrides)


def text_turn(text: str = "It is 72F and sunny in Paris.", seed: str = "weather/1") -> ModelTurn:
    return ModelTurn(Message("assistant", [Text(text)]), StopReason.END_TURN, seed=seed, usage=Usage(30, 9))


def stream_events(raw: bytes) -> list[StreamEvent]:
    decoder = WIRE.stream_decoder()
    events: list[StreamEvent] = []
    for event in iter_sse([raw]):
        events += decoder.feed(event)
    return events + decoder.finish()


# -- registry -------------------------------------------------------------------------------------


def test_registry_serves_the_gemini_module() -> None:
    wire = get_wire_format("gemini")
    assert isinstance(wire, Gemini)
    assert (wire.name, wire.base_url, wire.has_call_ids) == (
        "gemini",
        "https://generativelanguage.googleapis.com",
        False,
    )


# -- client side: encode_request ------------------------------------------------------------------


def test_encode_request_puts_model_and_method_in_the_path() -> None:
    request = Request(model="models/gemini-2.5-flash", messages=[user_text("hi")])
    plain = WIRE.encode_request(request, stream=False, api_key="KEY")
    streamed = WIRE.encode_request(request, stream=True, api_key="KEY")
    assert plain.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert streamed.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert plain.headers == {"x-goog-api-key": "KEY"}
    assert "model" not in plain.json and "stream" not in plain.json
    assert plain.json == streamed.json


def test_encode_request_always_sends_generation_config() -> None:
    bare = WIRE.encode_request(Request(MODEL, [user_text("hi")], max_tokens=64), stream=False, api_key=None)
    tuned = Request(MODEL, [user_text("hi")], max_tokens=64, temperature=0.2, stop_sequences=["END"])
    assert bare.json == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "generationConfig": {"maxOutputTokens": 64},
    }
    assert bare.headers == {}
    assert WIRE.encode_request(tuned, stream=False, api_key=None).json["generationConfig"] == {
        "maxOutputTokens": 64,
        "temperature": 0.2,
        "stopSequences": ["END"],
    }


def test_encode_request_declares_tools_with_their_json_schema() -> None:
    encoded = WIRE.encode_request(Request(MODEL, [user_text("hi")], tools=[WEATHER]), stream=False, api_key=None)
    assert encoded.json["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Get current weather for a city.",
                    "parametersJsonSchema": dict(WEATHER.parameters),
                }
            ]
        }
    ]


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        ("auto", {"mode": "AUTO"}),
        ("none", {"mode": "NONE"}),
        ("required", {"mode": "ANY"}),
        ("get_weather", {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}),
    ],
    ids=["auto", "none", "required", "named"],
)
def test_encode_request_maps_tool_choice_to_function_calling_config(choice: str, config: dict[str, Any]) -> None:
    request = Request(MODEL, [user_text("hi")], tools=[WEATHER], tool_choice=choice)
    encoded = WIRE.encode_request(request, stream=False, api_key=None)
    assert encoded.json["toolConfig"] == {"functionCallingConfig": config}
    assert parse(json.dumps(encoded.json).encode()).tool_choice == choice


def test_encode_request_folds_system_prompts_into_system_instruction() -> None:
    request = Request(MODEL, [system_text("Answer in French."), user_text("hi")], system="You are terse.")
    encoded = WIRE.encode_request(request, stream=False, api_key=None)
    assert encoded.json["systemInstruction"] == {"parts": [{"text": "You are terse."}, {"text": "Answer in French."}]}
    assert encoded.json["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]


def test_encode_request_replays_calls_without_invented_ids_but_with_signatures() -> None:
    turn = Message(
        "assistant",
        [
            Text("Let me check."),
            Reasoning.from_wire("gemini", {"thoughtSignature": SIGNATURE}),
            ToolCall("gcall_abc_0", "get_weather", {"city": "Paris"}),
            ToolCall("provider-id-7", "get_time", {"tz": "CET"}),
        ],
    )
    encoded = WIRE.encode_request(Request(MODEL, [user_text("hi"), turn]), stream=False, api_key=None)
    assert encoded.json["contents"][1] == {
        "role": "model",
        "parts": [
            {"text": "Let me check."},
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": SIGNATURE},
            {"functionCall": {"id": "provider-id-7", "name": "get_time", "args": {"tz": "CET"}}},
        ],
    }


def test_encode_request_merges_results_into_one_user_turn_in_append_order() -> None:
    turn = Message(
        "assistant", [ToolCall("gcall_t_0", "get_weather", {"city": "Paris"}), ToolCall("gcall_t_1", "get_time")]
    )
    messages = [
        user_text("hi"),
        turn,
        tool_result_message("gcall_t_1", "noon"),
        tool_result_message("gcall_t_0", "no such city", is_error=True),
        user_text("thanks"),
    ]
    encoded = WIRE.encode_request(Request(MODEL, messages), stream=False, api_key=None)
    assert encoded.json["contents"][2:] == [
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_time", "response": {"result": "noon"}}},
                {"functionResponse": {"name": "get_weather", "response": {"error": "no such city"}}},
            ],
        },
        {"role": "user", "parts": [{"text": "thanks"}]},
    ]
    assert "gcall_" not in json.dumps(encoded.json)


def test_encode_request_result_for_a_dropped_turn_still_reaches_the_order_check() -> None:
    # The lesson's DON'T: the assistant turn rebuilt as text. The result's name cannot be looked up,
    # so the id stands in; the fake (like the real API) then answers with the ordering error.
    messages = [user_text("hi"), assistant_text("Let me check."), tool_result_message("gcall_t_0", "72F")]
    encoded = WIRE.encode_request(Request(MODEL, messages), stream=False, api_key=None)
    assert encoded.json["contents"][2]["parts"][0]["functionResponse"]["name"] == "gcall_t_0"
    assert rejection(json.dumps(encoded.json).encode()).message == G2


# -- client side: decode_response -----------------------------------------------------------------


def test_decode_response_reads_the_recorded_call() -> None:
    response = WIRE.decode_response(RECORDED_CALL)
    (call,) = response.tool_calls()
    assert (call.name, dict(call.arguments)) == ("get_weather", {"city": "Paris"})
    assert call.id.startswith("gcall_") and call.id.endswith("_0")
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.usage == Usage(29, 15)
    assert (response.model, response.id) == ("gemini-2.5-flash", "m36LaZGyCLz1xs0PtNSB-QU")
    assert response.raw is RECORDED_CALL


def test_decode_response_ids_are_stable_and_distinct() -> None:
    again = json.loads(json.dumps(RECORDED_CALL))
    other = {**again, "responseId": "another-response-id-123"}
    no_id = {key: value for key, value in again.items() if key != "responseId"}
    first = WIRE.decode_response(RECORDED_CALL).tool_calls()[0].id
    assert WIRE.decode_response(again).tool_calls()[0].id == first
    assert WIRE.decode_response(other).tool_calls()[0].id != first
    assert WIRE.decode_response(no_id).tool_calls()[0].id == WIRE.decode_response(no_id).tool_calls()[0].id


def test_decode_response_keeps_a_provider_id_and_the_thought_signature() -> None:
    part = {"functionCall": {"id": "fc-1", "name": "get_time", "args": {}}, "thoughtSignature": SIGNATURE}
    data = {"candidates": [{"content": {"parts": [part], "role": "model"}, "finishReason": "STOP"}]}
    message = WIRE.decode_response(data).message
    (call,) = message.tool_calls()
    assert call.id == "fc-1"
    assert [part.data() for part in message.reasoning()] == [{"thoughtSignature": SIGNATURE}]
    assert message.content.index(call) == 1  # the signature's part comes first, as the call it rode on
    replayed = WIRE.encode_request(
        Request(MODEL, [user_text("t?"), WIRE.decode_response(data).message]), stream=False, api_key=None
    )
    assert replayed.json["contents"][1]["parts"] == [part]


@pytest.mark.parametrize("finish", ["STOP", "MAX_TOKENS", "OTHER", None])
def test_decode_response_any_call_means_tool_use(finish: str | None) -> None:
    candidate = {"content": {"parts": [{"functionCall": {"name": "get_time"}}]}, "finishReason": finish}
    response = WIRE.decode_response({"candidates": [candidate]})
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.tool_calls()[0].arguments == {}


@pytest.mark.parametrize(
    ("finish", "expected"),
    [
        ("STOP", StopReason.END_TURN),
        ("MAX_TOKENS", StopReason.MAX_TOKENS),
        ("SAFETY", StopReason.REFUSAL),
        ("RECITATION", StopReason.REFUSAL),
        ("BLOCKLIST", StopReason.REFUSAL),
        ("PROHIBITED_CONTENT", StopReason.REFUSAL),
        ("SPII", StopReason.REFUSAL),
        ("MALFORMED_FUNCTION_CALL", StopReason.OTHER),
    ],
)
def test_decode_response_maps_finish_reason(finish: str, expected: StopReason) -> None:
    candidate = {"content": {"parts": [{"text": "Hi."}], "role": "model"}, "finishReason": finish, "index": 0}
    assert WIRE.decode_response({"candidates": [candidate]}).stop_reason is expected


def test_decode_response_skips_thought_summaries_and_counts_thinking_as_output() -> None:
    parts = [{"text": "Pondering...", "thought": True}, {"text": "Paris."}]
    data = {
        "candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2, "thoughtsTokenCount": 40},
    }
    response = WIRE.decode_response(data)
    assert response.text() == "Paris."
    assert response.usage == Usage(5, 42)


def test_decode_response_blocked_prompt_is_a_refusal() -> None:
    response = WIRE.decode_response({"promptFeedback": {"blockReason": "SAFETY"}, "modelVersion": MODEL})
    assert response.stop_reason is StopReason.REFUSAL
    assert response.message == Message("assistant", ())


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([], "the response body is list"),
        ({"candidates": "x"}, "response.candidates is str"),
        ({"candidates": []}, "no candidates"),
        ({"candidates": [{"content": {"parts": {"text": "x"}}}]}, r"content\.parts is dict"),
        ({"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}}]}, "has no name"),
        (
            {"candidates": [{"content": {"parts": [{"functionCall": {"name": "get_time", "args": "{}"}}]}}]},
            "call 'get_time' with arguments that are not a JSON object",
        ),
        ({"candidates": [{}], "usageMetadata": {"promptTokenCount": "7"}}, "usageMetadata.promptTokenCount is str"),
    ],
    ids=["not-object", "candidates", "empty", "parts", "no-name", "args-string", "usage"],
)
def test_decode_response_malformed_has_clear_error(data: Any, match: str) -> None:
    with pytest.raises(ProviderError, match=match) as info:
        WIRE.decode_response(data)
    assert (info.value.provider, info.value.status) == ("gemini", 200)


# -- client side: streams and errors --------------------------------------------------------------


def test_stream_decoder_reads_the_recorded_stream() -> None:
    events = stream_events(RECORDED_STREAM)
    call_id = events[1].id if isinstance(events[1], ToolCallStart) else ""
    assert events == [
        TextDelta("Let me check the weather for you."),
        ToolCallStart(0, call_id, "get_weather"),
        ToolCallDelta(0, '{"location":"Paris"}'),
        ToolCallEnd(0),
        MessageEnd(StopReason.TOOL_USE, Usage(60, 52), "gemini-2.5-pro", ""),
    ]
    assert call_id.startswith("gcall_")


def test_stream_decoder_matches_decode_response_for_the_same_turn() -> None:
    conv = conversation()
    streamed = collect_stream(stream_events(b"".join(WIRE.encode_stream(call_turn(), conv))))
    whole = WIRE.decode_response(WIRE.encode_response(call_turn(), conv))
    assert streamed.message == whole.message
    assert (streamed.stop_reason, streamed.usage, streamed.id, streamed.model) == (
        whole.stop_reason,
        whole.usage,
        whole.id,
        whole.model,
    )


def test_stream_decoder_ignores_the_empty_text_that_carries_finish_reason() -> None:
    raw = (
        b'data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_time","args":{}}}],"role":"model"},'
        b'"index":0}],"responseId":"r1"}\r\n\r\n'
        b'data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}}],'
        b'"role":"model"},"index":0}],"responseId":"r1"}\r\n\r\n'
        b'data: {"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],'
        b'"responseId":"r1"}\r\n\r\n'
    )
    events = stream_events(raw)
    assert [type(event).__name__ for event in events] == [
        "ToolCallStart", "ToolCallDelta", "ToolCallEnd", "ToolCallStart", "ToolCallDelta", "ToolCallEnd", "MessageEnd",
    ]  # fmt: skip
    assert [event.index for event in events if isinstance(event, ToolCallStart)] == [0, 1]
    assert events[-1] == MessageEnd(StopReason.TOOL_USE, Usage(), "", "r1")


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        (
            b'data: {"candidates":[{"content":{"parts":[{"text":"Hi"}]}}]}\r\n\r\n',
            "ended before a chunk with finishReason",
        ),
        (b"data: {not json\r\n\r\n", "a stream chunk is not JSON"),
        (
            b'data: {"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP"}]}\r\n\r\n'
            b'data: {"candidates":[{"content":{"parts":[{"text":"b"}]}}]}\r\n\r\n',
            "went on after its final chunk",
        ),
    ],
    ids=["truncated", "not-json", "after-end"],
)
def test_stream_decoder_malformed_has_clear_error(raw: bytes, match: str) -> None:
    with pytest.raises(ProviderError, match=match):
        stream_events(raw)


def test_stream_decoder_error_chunk_has_clear_error() -> None:
    error = {
        "error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}
    }
    with pytest.raises(ProviderError, match="The model is overloaded") as info:
        WIRE.stream_decoder().feed(SSEEvent(None, json.dumps(error)))
    assert (info.value.status, info.value.error_type) == (503, "UNAVAILABLE")


def test_decode_error_keeps_the_message_verbatim() -> None:
    # coffeegrind123/gemini-for-claude-code#23, byte for byte.
    raw = (
        b'{\n  "error": {\n    "code": 400,\n    "message": "Please ensure that the number of function response '
        b'parts is equal to the number of function call parts of the function call turn.",\n    "status": '
        b'"INVALID_ARGUMENT"\n  }\n}\n'
    )
    error = WIRE.decode_error(400, raw)
    assert (error.message, error.status, error.error_type, error.provider) == (G3, 400, "INVALID_ARGUMENT", "gemini")
    assert str(error) == f"gemini 400 INVALID_ARGUMENT: {G3}"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            b'[{"error":{"code":429,"message":"Resource has been exhausted.","status":"RESOURCE_EXHAUSTED"}}]',
            "Resource has been exhausted.",
        ),
        (b"<html>Bad Gateway</html>", "<html>Bad Gateway</html>"),
        (b"", "HTTP 502 with an empty body"),
    ],
    ids=["array", "html", "empty"],
)
def test_decode_error_reads_other_bodies(raw: bytes, message: str) -> None:
    assert WIRE.decode_error(502, raw).message == message


# -- fake side: parse_request ---------------------------------------------------------------------

SDK_BODY = {
    "contents": [
        user("Weather in Paris and the time?"),
        {
            "role": "model",
            "parts": [
                {"text": "Checking."},
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": SIGNATURE},
                {"functionCall": {"name": "get_time", "args": {"tz": "CET"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"result": "72F"}}},
                {"functionResponse": {"name": "get_time", "response": {"error": "clock broken"}}},
                {"text": "Be brief."},
            ],
        },
    ],
    "systemInstruction": {"parts": [{"text": "You are terse."}], "role": "user"},
    "tools": [
        {
            "functionDeclarations": [
                {"name": "get_weather", "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}}},
                {"name": "get_time", "description": "Time.", "parametersJsonSchema": dict(TIME.parameters)},
            ]
        }
    ],
    "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
    "generationConfig": {},
}


def snake_case(value: Any) -> Any:
    """The proto field names hand-written clients use; the API accepts both spellings."""
    camel = ["functionCall", "functionResponse", "systemInstruction", "functionDeclarations", "toolConfig",
             "generationConfig", "functionCallingConfig", "thoughtSignature", "parametersJsonSchema"]  # fmt: skip
    names = {name: "".join(f"_{char.lower()}" if char.isupper() else char for char in name) for name in camel}
    if isinstance(value, dict):
        return {
            names.get(key, key): value[key] if key in ("args", "response") else snake_case(value[key]) for key in value
        }
    if isinstance(value, list):
        return [snake_case(item) for item in value]
    return value


def test_parse_request_reads_the_sdk_body_into_neutral_messages() -> None:
    conv = parse(json.dumps(SDK_BODY).encode(), stream=True)
    assert conv.messages == [
        system_text("You are terse."),
        user_text("Weather in Paris and the time?"),
        Message(
            "assistant",
            [
                Text("Checking."),
                Reasoning.from_wire("gemini", {"thoughtSignature": SIGNATURE}),
                ToolCall("gemini:1:0", "get_weather", {"city": "Paris"}),
                ToolCall("gemini:1:1", "get_time", {"tz": "CET"}),
            ],
        ),
        Message("tool", [ToolResult("gemini:1:0", "72F")]),
        Message("tool", [ToolResult("gemini:1:1", "clock broken", is_error=True)]),
        user_text("Be brief."),
    ]
    assert conv.paths == [
        "systemInstruction",
        "contents[0]",
        "contents[1]",
        "contents[2]",
        "contents[2]",
        "contents[2]",
    ]
    assert (conv.model, conv.stream, conv.tool_choice) == (MODEL, True, "auto")
    assert conv.tools == [
        Tool("get_weather", "", {"type": "object", "properties": {"city": {"type": "string"}}}),
        Tool("get_time", "Time.", TIME.parameters),
    ]


def test_parse_request_accepts_snake_case_like_the_api() -> None:
    snake, camel = parse(json.dumps(snake_case(SDK_BODY)).encode()), parse(json.dumps(SDK_BODY).encode())
    assert "function_call" in json.dumps(snake.raw)
    assert (snake.messages, snake.paths, snake.tools, snake.tool_choice) == (
        camel.messages,
        camel.paths,
        camel.tools,
        camel.tool_choice,
    )
    assert snake.messages[2].reasoning() == camel.messages[2].reasoning() != []


def test_parse_request_accepts_no_role_and_a_single_object_for_a_list() -> None:
    conv = parse(json.dumps({"contents": {"parts": {"text": "hi"}}}).encode())
    assert conv.messages == [user_text("hi")]


@pytest.mark.parametrize(
    ("config", "choice"),
    [
        ({"mode": "AUTO"}, "auto"),
        ({"mode": "NONE"}, "none"),
        ({"mode": "ANY"}, "required"),
        ({"mode": "ANY", "allowedFunctionNames": ["get_time"]}, "get_time"),
        ({"mode": "ANY", "allowedFunctionNames": ["get_time", "get_weather"]}, "required"),
        ({"mode": "any"}, "required"),
        ({"mode": 3}, "none"),
        ({"mode": "VALIDATED"}, "auto"),
        ({}, "auto"),
    ],
)
def test_parse_request_normalises_tool_config(config: dict[str, Any], choice: str) -> None:
    conv = parse(body([user("hi")], toolConfig={"functionCallingConfig": config}))
    assert conv.tool_choice == choice
    assert conv.forced_tool_choice == (choice not in ("auto", "none"))
    assert parse(body([user("hi")])).tool_choice is None


@pytest.mark.parametrize(
    ("answered", "ids"),
    [
        (["get_weather", "get_time"], ["gemini:1:0", "gemini:1:1"]),
        (["get_time", "get_weather"], ["gemini:1:1", "gemini:1:0"]),
        (["get_weather", "made_up"], ["gemini:1:0", "gemini:1:unmatched:1"]),
        (["get_time", "get_time"], ["gemini:1:1", "gemini:1:unmatched:1"]),
    ],
    ids=["in-order", "swapped", "invented", "twice"],
)
def test_parse_request_pairs_results_by_position_unless_the_name_disagrees(answered: list[str], ids: list[str]) -> None:
    conv = parse(body([user("hi"), calls("get_weather", "get_time"), answers(*answered)]))
    assert [message.tool_results()[0].call_id for message in conv.messages[2:]] == ids


def test_parse_request_model_falls_back_to_the_body() -> None:
    raw = body([user("hi")], model="models/gemini-2.0-flash")
    assert WIRE.parse_request(raw, path_model=None, path_stream=False).model == "gemini-2.0-flash"
    assert WIRE.parse_request(raw, path_model=MODEL, path_stream=False).model == MODEL


ONEOF = "required oneof field 'data' must have one initialized field\n"
PIPELINE = [user("hi"), calls("get_weather", "get_time")]


@pytest.mark.parametrize(
    ("contents", "message", "rule", "index"),
    [
        # G1: history starts with a call turn. Two call contents in a row are one model turn (the
        # API merges a run of model contents, which google-genai's streaming AFC relies on), so
        # answering one of its two calls is G3.
        ([calls("get_time"), answers("get_time")], G1, Rule.MALFORMED, 0),
        ([user("hi"), calls("get_time"), calls("get_time"), answers("get_time")], G3, Rule.MISSING_RESULT, 2),
        # G2: results first; results after a text-only model turn (the assistant_text DON'T).
        ([answers("get_time"), user("hi")], G2, Rule.RESULT_WITHOUT_TURN, 0),
        (
            [user("hi"), {"role": "model", "parts": [{"text": "Let me check."}]}, answers("get_time")],
            G2,
            Rule.RESULT_WITHOUT_TURN,
            2,
        ),
        # G3: one of two calls answered; results split over two contents; an extra result; rule 6.
        ([*PIPELINE, answers("get_weather")], G3, Rule.MISSING_RESULT, 2),
        ([*PIPELINE, answers("get_weather"), answers("get_time")], G3, Rule.MISSING_RESULT, 2),
        ([*PIPELINE, answers("get_weather", "get_time", "get_time")], G3, Rule.DUPLICATE_RESULT, 2),
        ([*PIPELINE, user("never mind")], G3, Rule.MISSING_RESULT, 2),
        # Structure.
        ([user("hi"), {"role": "assistant", "parts": [{"text": "x"}]}], ROLE, Rule.MALFORMED, 1),
        ([user("hi"), {"role": "tool", "parts": answers("get_time")["parts"]}], ROLE, Rule.MALFORMED, 1),
        (
            [{"role": "user", "parts": [{"text": "hi"}, *calls("get_time")["parts"], *answers("get_time")["parts"]]}],
            MIXED,
            Rule.RESULT_WITHOUT_TURN,
            0,
        ),
    ],
    ids=[
        "g1-first",
        "model-run-one-answer",
        "g2-first",
        "g2-text-turn",
        "g3-partial",
        "g3-split",
        "g3-extra",
        "g3-plain-user",
        "role-assistant",
        "role-tool",
        "mixed",
    ],  # fmt: skip
)
def test_parse_request_turn_rule_has_clear_error(
    contents: list[dict[str, Any]], message: str, rule: Rule, index: int
) -> None:
    error = rejection(body(contents))
    assert (error.status, error.message, error.rule, error.message_index) == (400, message, rule, index)
    assert json.loads(error.body) == {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}


def test_parse_request_error_body_is_pretty_printed_like_the_api() -> None:
    error = rejection(body([calls("get_time")]))
    assert error.body == (
        b'{\n  "error": {\n    "code": 400,\n    "message": "Please ensure that function call turn comes '
        b'immediately after a user turn or after a function response turn.",\n    "status": '
        b'"INVALID_ARGUMENT"\n  }\n}\n'
    )
    assert error.headers == {"content-type": "application/json; charset=UTF-8"}


def test_parse_request_message_index_counts_the_system_prompt_and_split_results() -> None:
    contents = [
        user("hi"),
        calls("get_weather", "get_time"),
        answers("get_weather", "get_time"),
        calls("get_time"),
        calls("get_time"),
        answers("get_time"),
    ]
    error = rejection(body(contents, systemInstruction={"parts": [{"text": "terse"}]}))
    assert error.message == G3
    # system, user, assistant, tool, tool, assistant (contents 3 and 4, one run), tool (content 5 = neutral 6)
    assert error.message_index == 6


@pytest.mark.parametrize(
    ("contents", "message", "index"),
    [
        ([], "* GenerateContentRequest.contents: contents is not specified\n", None),
        (
            [user("hi"), {"role": "model", "parts": []}],
            "* GenerateContentRequest.contents[1].parts: contents.parts must not be empty.\n",
            1,
        ),
        (
            [{"role": "user", "parts": [{"text": ""}]}],
            f"* GenerateContentRequest.contents[0].parts[0].data: {ONEOF}",
            0,
        ),
        (
            [user("hi"), calls("get_time"), {"role": "user", "parts": [{"functionResponse": {"response": {}}}]}],
            "* GenerateContentRequest.contents[2].parts[0].function_response.name: Name cannot be empty.\n",
            2,
        ),
        (
            [{"role": "user", "parts": []}, {"role": "user", "parts": [{}]}],
            "* GenerateContentRequest.contents[0].parts: contents.parts must not be empty.\n"
            f"* GenerateContentRequest.contents[1].parts[0].data: {ONEOF}",
            0,
        ),
    ],
    ids=["no-contents", "empty-parts", "empty-text", "response-name", "all-listed"],
)
def test_parse_request_field_violation_has_clear_error(
    contents: list[dict[str, Any]], message: str, index: int | None
) -> None:
    error = rejection(body(contents))
    assert (error.status, error.message, error.rule, error.message_index) == (400, message, Rule.MALFORMED, index)
    assert json.loads(error.body)["error"]["message"] == message


def test_parse_request_function_name_has_clear_error() -> None:
    error = rejection(body([user("hi")], tools=[{"functionDeclarations": [{"name": "get weather"}]}]))
    assert error.message.startswith(
        "* GenerateContentRequest.tools[0].function_declarations[0].name: "
        "Invalid function name. Must start with a letter"
    )


@pytest.mark.parametrize(
    ("raw", "message", "field"),
    [
        (b"not json", "Invalid JSON payload received. Unexpected token.\nnot json\n^", ""),
        (
            b'{"contents": [{"parts": [{"text": NaN}]}]}',
            'Invalid JSON payload received. Unexpected token.\n{"parts": [{"text": NaN}]}]}\n                    ^',
            "",
        ),
        (
            b'{"contents": [',
            "Invalid JSON payload received. Unexpected end of string. Expected a value."
            '\n{"contents": [\n              ^',
            "",
        ),
        (b"[]", 'Invalid JSON payload received. Unknown name "": Root element must be a message.', ""),
        (
            b'{"model": "x", "messages": []}',
            'Invalid JSON payload received. Unknown name "messages": Cannot find field.',
            "",
        ),
        (
            b'{"contents": "hi"}',
            "Invalid value at 'contents' (type.googleapis.com/google.ai.generativelanguage.v1beta.Content), \"hi\"",
            "contents",
        ),
        (
            b'{"contents": [{"parts": [{"text": 5}]}]}',
            "Invalid value at 'contents[0].parts[0].text' (TYPE_STRING), 5",
            "contents[0].parts[0].text",
        ),
        (
            b'{"contents": [], "systemInstruction": [{"text": "x"}]}',
            'Invalid JSON payload received. Unknown name "systemInstruction": '
            "Proto field is not repeating, cannot start list.",
            "",
        ),
        (
            b'{"contents": [{"parts": [{"text": "x", "thoughtSignature": "not base64!"}]}]}',
            "Invalid value at 'contents[0].parts[0].thought_signature' (TYPE_BYTES), "
            'Base64 decoding failed for "not base64!"',
            "contents[0].parts[0].thought_signature",
        ),
        (
            b'{"contents": [{"parts": [{"text": "x", "functionCall": {"name": "f"}}]}]}',
            "Invalid value at 'contents[0].parts[0]' (oneof), "
            "oneof field 'data' is already set. Cannot set 'functionCall'",
            "contents[0].parts[0]",
        ),
        (
            b'{"contents": [{"parts": [{"functionCall": {"name": "f", "args": [1]}}]}]}',
            "Invalid value at 'contents[0].parts[0].function_call.args' "
            "(type.googleapis.com/google.protobuf.Struct), [1]",
            "contents[0].parts[0].function_call.args",
        ),
        (
            b'{"contents": [], "toolConfig": {"functionCallingConfig": {"mode": "SOMETIMES"}}}',
            "Invalid value at 'tool_config.function_calling_config.mode' "
            '(type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), "SOMETIMES"',
            "tool_config.function_calling_config.mode",
        ),
    ],
    ids=[
        "not-json",
        "nan",
        "truncated",
        "root-list",
        "unknown-name",
        "contents-string",
        "text-number",
        "not-repeating",
        "base64",
        "oneof",
        "struct",
        "enum",
    ],  # fmt: skip
)
def test_parse_request_malformed_body_has_clear_error(raw: bytes, message: str, field: str) -> None:
    error = rejection(raw)
    assert (error.status, error.message, error.rule) == (400, message, Rule.MALFORMED)
    violation = {"field": field, "description": message} if field else {"description": message}
    assert json.loads(error.body)["error"] == {
        "code": 400,
        "message": message,
        "status": "INVALID_ARGUMENT",
        "details": [{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": [violation]}],
    }


def test_parse_request_ignores_unknown_keys_inside_contents() -> None:
    contents = [{"role": "user", "parts": [{"text": "hi", "annotations": []}], "extra": 1}]
    assert parse(body(contents, safetySettings=[], generationConfig={"temperature": 0})).messages == [user_text("hi")]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
KEYS = st.sampled_from(
    ["contents", "role", "parts", "text", "functionCall", "function_call", "functionResponse", "name", "args",
     "response", "thoughtSignature", "thought", "tools", "functionDeclarations", "parameters", "toolConfig",
     "functionCallingConfig", "mode", "allowedFunctionNames", "systemInstruction", "model", "generationConfig"]
)  # fmt: skip


def mutate(value: Any, data: st.DataObject) -> Any:
    """Replace one node of a valid body (at any depth) with arbitrary JSON."""
    if isinstance(value, dict) and value and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(value)))
        return {**value, key: mutate(value[key], data)}
    if isinstance(value, list) and value and data.draw(st.booleans()):
        index = data.draw(st.integers(0, len(value) - 1))
        return [*value[:index], mutate(value[index], data), *value[index + 1 :]]
    return data.draw(JSON | st.dictionaries(KEYS, JSON, max_size=3))


def assert_only_wire_errors(raw: bytes) -> None:
    try:
        conv = parse(raw)
    except ErrorResponse as error:
        assert error.status == 400 and json.loads(error.body)["error"]["message"] == error.message
    else:
        assert len(conv.messages) == len(conv.paths)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_parse_request_never_crashes_on_mutated_bodies(data: st.DataObject) -> None:
    assert_only_wire_errors(json.dumps(mutate(SDK_BODY, data)).encode())


@settings(max_examples=150, deadline=None)
@given(JSON)
def test_parse_request_never_crashes_on_arbitrary_json(value: Any) -> None:
    assert_only_wire_errors(json.dumps(value).encode())


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=64))
def test_parse_request_never_crashes_on_arbitrary_bytes(raw: bytes) -> None:
    assert_only_wire_errors(raw)


def test_parse_request_huge_numbers_have_clear_errors() -> None:
    huge = "1" * 5000
    assert rejection(huge.encode()).message.endswith("Root element must be a message.")
    error = rejection(f'{{"contents": [{{"parts": [{{"text": {huge}}}]}}]}}'.encode())
    assert error.message == "Invalid value at 'contents[0].parts[0].text' (TYPE_STRING), inf"


def test_parse_request_lone_surrogate_has_clear_error() -> None:
    error = rejection(b'{"contents": [{"parts": [{"text": "\\ud800"}]}]}')
    assert error.message.startswith("Invalid JSON payload received. Unexpected token.")
    assert parse(b'{"contents": [{"parts": [{"text": "\\ud83d\\ude00"}]}]}').messages == [user_text("\U0001f600")]


def test_parse_request_too_deep_has_clear_error() -> None:
    for depth in (150, 5000):
        raw = b'{"contents": ' + b"[" * depth + b"]" * depth + b"}"
        assert "Max recursion depth reached" in rejection(raw).message


def test_parse_request_depth_limit_is_protobufs_100_levels_exactly() -> None:
    """The object at level 100 converts; one level more is refused (the cheap pre-check that skips the
    walk over every node must not move the boundary)."""

    def nested(levels: int) -> bytes:  # root, contents, content, parts, part, functionResponse, response: 7
        inner = b"[" * (levels - 7) + b"]" * (levels - 7)
        return (
            b'{"contents": [{"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"k": '
            + inner
            + b"}}}]}]}"
        )

    assert "Max recursion depth reached" not in rejection(nested(100)).message  # refused later, for pairing
    assert "Max recursion depth reached" in rejection(nested(101)).message


@settings(max_examples=100, deadline=None)
@given(JSON)
def test_decode_response_never_crashes(value: Any) -> None:
    try:
        WIRE.decode_response(value if not isinstance(value, dict) else {"candidates": [value]})
    except ProviderError as error:
        assert error.provider == "gemini"


# -- fake side: encode_response / encode_stream -----------------------------------------------------


def test_encode_response_has_the_documented_shape() -> None:
    encoded = WIRE.encode_response(call_turn(), conversation())
    assert encoded == {
        "candidates": [
            {
                "content": {
                    "parts": [
                        {"text": "Let me check."},
                        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                        {"functionCall": {"name": "get_time", "args": {}}},
                    ],
                    "role": "model",
                },
                "finishReason": "STOP",
                "finishMessage": "Model generated function call(s).",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 20,
            "candidatesTokenCount": 7,
            "totalTokenCount": 27,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 20}],
        },
        "modelVersion": MODEL,
        "responseId": encoded["responseId"],
    }


def test_encode_response_ids_are_deterministic_base64url() -> None:
    response_id = WIRE.encode_response(text_turn(seed="weather/1"), conversation())["responseId"]
    assert response_id == "8BBZz2vxwTah-SKlhx8WVRf"  # pinned: the same in every process
    assert len(response_id) == 23 and set(response_id) <= set(  # 23, as recorded (tests/wire/test_fidelity.py)
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    )
    assert WIRE.call_id("weather/0/0") == WIRE.call_id("weather/0/0") != WIRE.call_id("weather/0/1")
    assert json.dumps(WIRE.encode_response(call_turn(), conversation())).count(WIRE.call_id("weather/0/0")) == 0


@pytest.mark.parametrize(
    ("turn", "finish"),
    [
        (ModelTurn(Message("assistant", [Text("Cut")]), StopReason.MAX_TOKENS, seed="s"), "MAX_TOKENS"),
        (ModelTurn(Message("assistant", [Text("No.")]), StopReason.REFUSAL, seed="s"), "SAFETY"),
        (
            ModelTurn(Message("assistant", [Text("Hi")]), StopReason.END_TURN, seed="s", raw_stop_reason="OTHER"),
            "OTHER",
        ),
    ],
    ids=["max-tokens", "refusal", "raw"],
)
def test_encode_response_finish_reason(turn: ModelTurn, finish: str) -> None:
    candidate = WIRE.encode_response(turn, conversation())["candidates"][0]
    assert candidate["finishReason"] == finish
    assert "finishMessage" not in candidate


def test_encode_response_empty_turn_has_no_parts() -> None:
    turn = ModelTurn(Message("assistant", []), StopReason.MAX_TOKENS, seed="s")
    assert WIRE.encode_response(turn, conversation())["candidates"][0]["content"] == {"role": "model"}


def test_encode_stream_frames_like_the_api() -> None:
    frames = WIRE.encode_stream(call_turn(), conversation())
    assert all(frame.startswith(b"data: {") and frame.endswith(b"}\r\n\r\n") for frame in frames)
    chunks = [json.loads(frame[len(b"data: ") :]) for frame in frames]
    parts = [chunk["candidates"][0]["content"]["parts"] for chunk in chunks]
    assert parts == [
        [{"text": "Let "}],
        [{"text": "me c"}],
        [{"text": "heck"}],
        [{"text": "."}],
        [
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
            {"functionCall": {"name": "get_time", "args": {}}},
        ],
    ]
    assert ["finishReason" in chunk["candidates"][0] for chunk in chunks] == [False] * 4 + [True]
    assert {chunk["responseId"] for chunk in chunks} == {
        WIRE.encode_response(call_turn(), conversation())["responseId"]
    }
    assert all(chunk["modelVersion"] == MODEL and "usageMetadata" in chunk for chunk in chunks)


def test_encode_stream_is_byte_identical_every_time() -> None:
    assert WIRE.encode_stream(call_turn(), conversation()) == WIRE.encode_stream(call_turn(), conversation())
    assert json.dumps(WIRE.encode_response(call_turn(), conversation())) == json.dumps(
        Gemini().encode_response(call_turn(), conversation())
    )


def test_encode_stream_of_an_empty_turn_still_finishes() -> None:
    turn = ModelTurn(Message("assistant", []), StopReason.END_TURN, seed="s")
    events = stream_events(b"".join(WIRE.encode_stream(turn, conversation())))
    assert events == [MessageEnd(StopReason.END_TURN, Usage(), MODEL, events[-1].id)]  # type: ignore[union-attr]


def test_error_envelope_maps_status_and_sandbox_codes() -> None:
    error = WIRE.error(404, "models/x is not found", rule=Rule.UNKNOWN_SCENARIO, param="model", code="model_not_found")
    assert json.loads(error.body)["error"] == {
        "code": 404,
        "message": "models/x is not found",
        "status": "NOT_FOUND",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "MODEL_NOT_FOUND", "domain": "skyl-sandbox"}
        ],
    }
    assert json.loads(WIRE.error(400, "x", rule=Rule.MALFORMED, code="FAILED_PRECONDITION").body)["error"][
        "status"
    ] == ("FAILED_PRECONDITION")


# -- round trip ---------------------------------------------------------------------------------------


def test_round_trip_keeps_names_arguments_and_results_in_order() -> None:
    first = WIRE.decode_response(WIRE.encode_response(call_turn(), conversation()))
    messages = [user_text("Weather and time?"), first.message]
    messages += [
        tool_result_message(call.id, f"result {n}", is_error=n == 1) for n, call in enumerate(first.tool_calls())
    ]
    request = Request(MODEL, messages, tools=[WEATHER, TIME], system="Be terse.", tool_choice="auto")
    conv = parse(json.dumps(WIRE.encode_request(request, stream=False, api_key="k").json).encode())
    assert [message.role for message in conv.messages] == ["system", "user", "assistant", "tool", "tool"]
    echoed = conv.messages[2].tool_calls()
    assert [(call.name, dict(call.arguments)) for call in echoed] == [
        (call.name, dict(call.arguments)) for call in first.tool_calls()
    ]
    results = [message.tool_results()[0] for message in conv.messages[3:]]
    assert [(result.call_id, result.content, result.is_error) for result in results] == [
        (echoed[0].id, "result 0", False),
        (echoed[1].id, "result 1", True),
    ]
    assert conv.tools == [WEATHER, TIME] and conv.tool_choice == "auto"


# -- the official SDK ----------------------------------------------------------------------------------

Script = Callable[[Conversation], ModelTurn]


def weather_script(conv: Conversation) -> ModelTurn:
    """Call both tools, then answer once the results are in."""
    return text_turn() if conv.messages[-1].role == "tool" else call_turn()


def fake_gemini(script: Script) -> tuple[httpx2.Client, list[str]]:
    """An httpx2 client whose transport is the fake: parse_request, then the scripted turn."""
    paths: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        paths.append(request.url.path)
        found = route(request.url.path)
        assert found is not None and found.provider == "gemini"
        try:
            conv = WIRE.parse_request(request.content, path_model=found.model, path_stream=found.stream)
        except ErrorResponse as error:
            return httpx2.Response(error.status, content=error.body, headers=error.headers)
        turn = script(conv)
        if conv.stream:
            frames = b"".join(WIRE.encode_stream(turn, conv))
            return httpx2.Response(200, content=frames, headers={"content-type": "text/event-stream"})
        return httpx2.Response(200, json=WIRE.encode_response(turn, conv))

    return httpx2.Client(transport=httpx2.MockTransport(handler)), paths


def sdk_client(http: httpx2.Client, **options: Any) -> genai.Client:
    return genai.Client(
        api_key="x", http_options=types.HttpOptions(base_url="http://test", httpx_client=http, **options)
    )


@pytest.fixture
def sdk() -> Iterator[tuple[genai.Client, list[str]]]:
    http, paths = fake_gemini(weather_script)
    client = sdk_client(http)
    yield client, paths  # the client stays referenced for the whole test: an unreferenced one can be closed mid-request
    http.close()


def sdk_tools() -> types.GenerateContentConfig:
    declarations = [
        types.FunctionDeclaration(name="get_weather", parameters_json_schema=dict(WEATHER.parameters)),
        types.FunctionDeclaration(
            name="get_time",
            parameters=types.Schema(type=types.Type.OBJECT, properties={"tz": types.Schema(type=types.Type.STRING)}),
        ),
    ]
    return types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=declarations)],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


def test_sdk_generate_content_parses_calls(sdk: tuple[genai.Client, list[str]]) -> None:
    client, paths = sdk
    response = client.models.generate_content(model=MODEL, contents="Weather and time?", config=sdk_tools())
    assert [(call.name, call.args, call.id) for call in response.function_calls or []] == [
        ("get_weather", {"city": "Paris"}, None),
        ("get_time", {}, None),
    ]
    assert response.candidates and response.candidates[0].finish_reason == types.FinishReason.STOP
    assert response.usage_metadata and response.usage_metadata.total_token_count == 27
    assert (
        response.model_version == MODEL
        and response.response_id == WIRE.encode_response(call_turn(), conversation())["responseId"]
    )
    # google-genai 3.x defaults to the v1 API, 2.x (the newest on Python 3.10) to v1beta: both are served.
    assert paths in ([f"/v1/models/{MODEL}:generateContent"], [f"/v1beta/models/{MODEL}:generateContent"])


def test_sdk_stream_parses_chunks(sdk: tuple[genai.Client, list[str]]) -> None:
    client, paths = sdk
    chunks = list(client.models.generate_content_stream(model=MODEL, contents="Weather and time?", config=sdk_tools()))
    text = "".join(chunk.text or "" for chunk in chunks if not chunk.function_calls)
    streamed_calls = [call.name for chunk in chunks for call in chunk.function_calls or []]
    assert (text, streamed_calls) == ("Let me check.", ["get_weather", "get_time"])
    assert [bool(chunk.candidates and chunk.candidates[0].finish_reason) for chunk in chunks] == [False] * 4 + [True]
    assert paths in ([f"/v1/models/{MODEL}:streamGenerateContent"], [f"/v1beta/models/{MODEL}:streamGenerateContent"])


def test_sdk_function_response_round_trip(sdk: tuple[genai.Client, list[str]]) -> None:
    client, _ = sdk
    config = sdk_tools()
    question = types.Content(role="user", parts=[types.Part.from_text(text="Weather and time?")])
    first = client.models.generate_content(model=MODEL, contents=[question], config=config)
    assert first.candidates and first.candidates[0].content
    answers_turn = types.Content(
        role="user",
        parts=[
            types.Part.from_function_response(name="get_weather", response={"result": "72F"}),
            types.Part.from_function_response(name="get_time", response={"result": "noon"}),
        ],
    )
    final = client.models.generate_content(
        model=MODEL, contents=[question, first.candidates[0].content, answers_turn], config=config
    )
    assert final.text == "It is 72F and sunny in Paris." and not final.function_calls


def test_sdk_automatic_function_calling_completes_the_loop(sdk: tuple[genai.Client, list[str]]) -> None:
    client, paths = sdk

    def get_weather(city: str) -> str:
        """Get current weather for a city."""
        return f"72F in {city}"

    def get_time(tz: str = "UTC") -> str:
        """Current time in a zone."""
        return f"noon {tz}"

    config = types.GenerateContentConfig(tools=[get_weather, get_time])
    response = client.models.generate_content(model=MODEL, contents="Weather and time?", config=config)
    assert response.text == "It is 72F and sunny in Paris."
    assert len(paths) == 2  # the SDK's own loop sent the two functionResponses back, id-less


def test_sdk_chat_stream_helper() -> None:
    def calls_only(conv: Conversation) -> ModelTurn:
        if conv.messages[-1].role == "tool":
            return text_turn()
        return ModelTurn(Message("assistant", call_turn().message.tool_calls()), StopReason.TOOL_USE, seed="chat/0")

    http, _ = fake_gemini(calls_only)
    client = sdk_client(http)
    chat = client.chats.create(model=MODEL, config=sdk_tools())
    streamed = list(chat.send_message_stream("Weather and time?"))
    assert [call.name for chunk in streamed for call in chunk.function_calls or []] == ["get_weather", "get_time"]
    parts = [
        types.Part.from_function_response(name="get_weather", response={"result": "72F"}),
        types.Part.from_function_response(name="get_time", response={"result": "noon"}),
    ]
    assert "".join(chunk.text or "" for chunk in chat.send_message_stream(parts)) == "It is 72F and sunny in Paris."
    roles = [content.role for content in chat.get_history(curated=True)]
    assert roles[:3] == ["user", "model", "user"] and set(roles[3:]) == {"model"}  # one history turn per chunk


def test_sdk_v1beta_path_is_served_too() -> None:
    http, paths = fake_gemini(weather_script)
    client = sdk_client(http, api_version="v1beta")
    response = client.models.generate_content(model=MODEL, contents="Weather and time?", config=sdk_tools())
    assert [call.name for call in response.function_calls or []] == ["get_weather", "get_time"]
    assert paths == [f"/v1beta/models/{MODEL}:generateContent"]


@pytest.mark.parametrize(
    ("contents", "message"),
    [
        (lambda call_turn: [call_turn], G1),
        (
            lambda call_turn: [
                types.Content(
                    role="user",
                    parts=[types.Part.from_function_response(name="get_weather", response={"result": "72F"})],
                )
            ],
            G2,
        ),
        (
            lambda call_turn: [
                types.Content(role="user", parts=[types.Part.from_text(text="Weather and time?")]),
                call_turn,
                types.Content(
                    role="user",
                    parts=[types.Part.from_function_response(name="get_weather", response={"result": "72F"})],
                ),
            ],
            G3,
        ),
    ],
    ids=["g1", "g2", "g3"],
)
def test_sdk_ordering_mistake_raises_client_error(
    sdk: tuple[genai.Client, list[str]], contents: Callable[[types.Content], list[types.Content]], message: str
) -> None:
    client, _ = sdk
    first = client.models.generate_content(model=MODEL, contents="Weather and time?", config=sdk_tools())
    assert first.candidates and first.candidates[0].content
    with pytest.raises(genai_errors.ClientError) as info:
        client.models.generate_content(model=MODEL, contents=contents(first.candidates[0].content), config=sdk_tools())
    assert (info.value.code, info.value.status, info.value.message) == (400, "INVALID_ARGUMENT", message)
