"""OpenAI Responses wire format: both sides, judged by the recorded shapes and the official SDK."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Callable
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
    Usage,
    assistant_text,
    tool_result_message,
    user_text,
)
from sandbox.wire import Conversation, ErrorResponse, ModelTurn, Rule, get_wire_format
from sandbox.wire._sse import SSEParser, iter_sse
from sandbox.wire.openai_responses import WIRE, OpenAIResponses
from sandbox.wire.openai_responses._validate import NON_JSON_MESSAGE

WEATHER = Tool(
    "get_weather",
    "Current weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
CALL_A = "call_ydtVlYcFLcDX2C7dcHgKZjl3"
CALL_B = "call_okunv0eUNIXE8kqY81fgYvCs"
FC_A = "fc_684b3e6c2ab8819b9167b4bbbc53c35d091e30eaec0a395b"

# wire-openai.md 3.2: the `response` of a recorded response.completed event (prism-php, 2025-06).
RECORDED_RESPONSE: dict[str, Any] = {
    "id": "resp_684b3e6ac540819ba8d482c36f131496091e30eaec0a395b", "object": "response",
    "created_at": 1749761642, "status": "completed", "background": False, "error": None,
    "incomplete_details": None, "instructions": None, "max_output_tokens": 2048, "model": "gpt-4o-2024-08-06",
    "output": [
        {"id": "fc_684b3e6bdeb8819b9ff56d3e0ad80b4c091e30eaec0a395b", "type": "function_call",
         "status": "completed", "arguments": "{\"query\":\"Detroit Tigers game schedule October 10, 2023\"}",
         "call_id": CALL_B, "name": "search"},
        {"id": FC_A, "type": "function_call", "status": "completed", "arguments": "{\"city\":\"Detroit\"}",
         "call_id": CALL_A, "name": "weather"},
    ],
    "parallel_tool_calls": True, "previous_response_id": None, "reasoning": {"effort": None, "summary": None},
    "service_tier": "default", "store": True, "temperature": 1.0, "text": {"format": {"type": "text"}},
    "tool_choice": "auto",
    "tools": [
        {"type": "function", "description": "useful when you need to search for current weather conditions",
         "name": "weather", "parameters": {"type": "object", "properties": {"city": {
             "description": "The city that you want the weather for", "type": "string"}}, "required": ["city"]},
         "strict": True},
        {"type": "function", "description": "useful for searching current events or data", "name": "search",
         "parameters": {"type": "object", "properties": {"query": {"description": "The detailed search query",
                                                                   "type": "string"}}, "required": ["query"]},
         "strict": True},
    ],
    "top_p": 1.0, "truncation": "disabled",
    "usage": {"input_tokens": 92, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 52,
              "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 144},
    "user": None, "metadata": {},
}  # fmt: skip
# wire-openai.md 3.2: a recorded text output item (openai-python tests, 2025-08).
RECORDED_TEXT_ITEM = {
    "id": "msg_689a0000", "type": "message", "status": "completed", "role": "assistant",
    "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": "It's 18C and clear."}],
}  # fmt: skip

R1 = "No tool output found for function call {}."
R2 = "No tool call found for function call output with call_id {}."


# -- helpers -----------------------------------------------------------------------------------------


def body(**fields: Any) -> bytes:
    return json.dumps({"model": "gpt-4o-mini", **fields}).encode()


def fc(call_id: str = CALL_A, name: str = "get_weather", **extra: Any) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": '{"city":"Paris"}', **extra}


def fco(call_id: str = CALL_A, output: Any = "18C, clear") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


USER = {"role": "user", "content": "What's the weather in Paris?"}


def parse(data: bytes) -> Conversation:
    return WIRE.parse_request(data, path_model=None, path_stream=False)


def rejection(data: bytes) -> ErrorResponse:
    with pytest.raises(ErrorResponse) as caught:
        parse(data)
    return caught.value


def envelope(error: ErrorResponse) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(error.body)["error"]
    return decoded


def conversation(**raw: Any) -> Conversation:
    return parse(body(input=[USER], tools=[{"type": "function", "name": "get_weather", "parameters": None}], **raw))


def call_turn(seed: str = "weather:1", *, text: str = "", **arguments: Any) -> ModelTurn:
    parts: list[Any] = [Text(text)] if text else []
    parts.append(ToolCall(WIRE.call_id(seed), "get_weather", arguments or {"city": "Paris"}))
    return ModelTurn(Message("assistant", parts), StopReason.TOOL_USE, seed=seed, usage=Usage(76, 24))


def text_turn(text: str = "It's 18C and clear.", stop: StopReason = StopReason.END_TURN) -> ModelTurn:
    return ModelTurn(Message("assistant", [Text(text)]), stop, seed="weather:2", usage=Usage(90, 9))


def decode_stream(frames: list[bytes], chunk: int = 7) -> list[StreamEvent]:
    """Feed the bytes in awkward chunks, as a socket would."""
    decoder, parser, events = WIRE.stream_decoder(), SSEParser(), []
    data = b"".join(frames)
    for start in range(0, len(data), chunk):
        for sse in parser.feed(data[start : start + chunk]):
            events.extend(decoder.feed(sse))
    for sse in parser.close()[0]:
        events.extend(decoder.feed(sse))
    return events + decoder.finish()


def sse_events(frames: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(event.data) for event in iter_sse(frames)]


def sdk_client(*turns: ModelTurn, seen: list[Conversation] | None = None) -> openai.OpenAI:
    """The official SDK, talking to parse_request + encode_response/encode_stream in-process."""
    script = list(turns)

    def handler(request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/responses"
        try:
            parsed = parse(request.content)
        except ErrorResponse as error:
            return httpx2.Response(error.status, content=error.body, headers=error.headers)
        if seen is not None:
            seen.append(parsed)
        turn = script.pop(0)
        if parsed.stream:
            frames = b"".join(WIRE.encode_stream(turn, parsed))
            return httpx2.Response(200, content=frames, headers={"content-type": WIRE.stream_media_type})
        return httpx2.Response(200, json=WIRE.encode_response(turn, parsed))

    transport = httpx2.MockTransport(handler)
    return openai.OpenAI(
        api_key="x", base_url="http://test/v1", max_retries=0, http_client=httpx2.Client(transport=transport)
    )


SDK_TOOL: Any = {"type": "function", "name": "get_weather", "parameters": dict(WEATHER.parameters), "strict": False}


# -- client side: encoding -----------------------------------------------------------------------------


def test_encode_request_matches_documented_round_trip_shape() -> None:
    request = Request(
        model="gpt-4o-mini",
        system="You are terse.",
        messages=[
            user_text("What's the weather in Paris?"),
            Message("assistant", [ToolCall(CALL_A, "get_weather", {"city": "Paris"}, meta={"item_id": FC_A})]),
            tool_result_message(CALL_A, "18C, clear"),
        ],
        tools=[WEATHER],
    )
    encoded = WIRE.encode_request(request, stream=False, api_key="sk-test")
    assert encoded.path == "/responses"
    assert encoded.headers == {"Authorization": "Bearer sk-test"}
    assert encoded.json == {
        "model": "gpt-4o-mini",
        "instructions": "You are terse.",
        "input": [
            {"role": "user", "content": "What's the weather in Paris?"},
            {"type": "function_call", "id": FC_A, "call_id": CALL_A, "name": "get_weather",
             "arguments": '{"city":"Paris"}'},
            {"type": "function_call_output", "call_id": CALL_A, "output": "18C, clear"},
        ],
        "tools": [{"type": "function", "name": "get_weather", "description": "Current weather for a city",
                   "parameters": dict(WEATHER.parameters), "strict": False}],
        "max_output_tokens": 1024,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ("get_weather", {"type": "function", "name": "get_weather"}),
    ],
    ids=["auto", "none", "required", "named"],
)
def test_encode_request_tool_choice_variants(choice: str, expected: Any) -> None:
    request = Request(model="m", messages=[user_text("hi")], tools=[WEATHER], tool_choice=choice)
    assert WIRE.encode_request(request, stream=False, api_key=None).json["tool_choice"] == expected


def test_encode_request_assistant_text_then_calls_become_message_then_function_call_items() -> None:
    turn = Message(
        "assistant",
        [Text("Checking both."), ToolCall("call_1", "get_weather", {"city": "Paris"}), ToolCall("call_2", "t", {})],
    )
    items = WIRE.encode_request(Request(model="m", messages=[turn]), stream=True, api_key=None).json["input"]
    assert items == [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking both."}]},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call", "call_id": "call_2", "name": "t", "arguments": "{}"},
    ]


def test_encode_request_error_result_keeps_its_wording_because_the_api_has_no_error_flag() -> None:
    request = Request(model="m", messages=[tool_result_message("call_1", "Error: city not found", is_error=True)])
    item = WIRE.encode_request(request, stream=False, api_key=None).json["input"][0]
    assert item == {"type": "function_call_output", "call_id": "call_1", "output": "Error: city not found"}


def test_encode_request_stream_and_temperature_and_several_user_texts() -> None:
    request = Request(model="m", messages=[Message("user", [Text("a"), Text("b")])], temperature=0.2)
    encoded = WIRE.encode_request(request, stream=True, api_key=None)
    assert encoded.json["stream"] is True and encoded.json["temperature"] == 0.2
    assert encoded.json["input"] == [{"role": "user", "content": [{"type": "input_text", "text": "a"},
                                                                  {"type": "input_text", "text": "b"}]}]  # fmt: skip
    assert encoded.headers == {}


def test_encode_request_stop_sequences_has_clear_error() -> None:
    request = Request(model="m", messages=[user_text("hi")], stop_sequences=["END"])
    with pytest.raises(UsageError, match=r"(?s)no stop sequences.*stop_sequences=\('END',\).*provider='openai'"):
        WIRE.encode_request(request, stream=False, api_key=None)


def test_registry_serves_this_module_with_the_real_base_url() -> None:
    wire = get_wire_format("openai-responses")
    assert isinstance(wire, OpenAIResponses) and wire is WIRE
    assert (wire.name, wire.base_url) == ("openai-responses", "https://api.openai.com/v1")


# -- client side: decoding -----------------------------------------------------------------------------


def test_decode_response_recorded_parallel_calls() -> None:
    response = WIRE.decode_response(RECORDED_RESPONSE)
    calls = response.tool_calls()
    assert calls == [
        ToolCall(CALL_B, "search", {"query": "Detroit Tigers game schedule October 10, 2023"}),
        ToolCall(CALL_A, "weather", {"city": "Detroit"}),
    ]
    assert calls[1].meta == {"item_id": FC_A}
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.usage == Usage(92, 52)
    assert (response.model, response.id) == ("gpt-4o-2024-08-06", RECORDED_RESPONSE["id"])


def test_decode_response_recorded_text_item_ends_the_turn() -> None:
    data = {**RECORDED_RESPONSE, "output": [{"type": "reasoning", "id": "rs_1", "summary": []}, RECORDED_TEXT_ITEM]}
    response = WIRE.decode_response(data)
    assert response.text() == "It's 18C and clear."
    assert response.message.reasoning()[0].data() == {"type": "reasoning", "id": "rs_1", "summary": []}
    assert response.stop_reason is StopReason.END_TURN and response.tool_calls() == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
          "output": [RECORDED_TEXT_ITEM]}, StopReason.MAX_TOKENS),
        ({"output": [{**RECORDED_TEXT_ITEM, "content": [{"type": "refusal", "refusal": "No."}]}]},
         StopReason.REFUSAL),
        ({"status": "incomplete", "incomplete_details": {"reason": "content_filter"}}, StopReason.TOOL_USE),
    ],
    ids=["max_output_tokens", "refusal", "calls-win-over-incomplete"],
)  # fmt: skip
def test_decode_response_stop_reasons(changes: dict[str, Any], expected: StopReason) -> None:
    assert WIRE.decode_response({**RECORDED_RESPONSE, **changes}).stop_reason is expected


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ([], r"openai-responses sent a response that is not a JSON object \(got list\)"),
        ({"id": "resp_1", "model": "m"}, r"the response with no list 'output' \(got nothing\)"),
        ({**RECORDED_RESPONSE, "output": [fc(arguments='{"city":')]},
         r"arguments for call call_yd\w+ \(get_weather\) that are not valid JSON"),
        ({**RECORDED_RESPONSE, "output": [fc(arguments="[1]")]}, r"arguments .* that are not a JSON object"),
        ({**RECORDED_RESPONSE, "output": [{"type": "function_call", "name": "f", "arguments": "{}"}]},
         r"output\[0\] with no str 'call_id'"),
        ({**RECORDED_RESPONSE, "usage": {"input_tokens": "92"}}, r"usage with no int 'input_tokens'"),
        ({**RECORDED_RESPONSE, "status": "failed", "error": {"code": "server_error", "message": "Boom."}},
         r"Boom\."),
    ],
    ids=["not-object", "no-output", "bad-arguments", "list-arguments", "no-call-id", "usage-type", "failed"],
)  # fmt: skip
def test_decode_response_malformed_has_clear_error(data: Any, match: str) -> None:
    with pytest.raises(ProviderError, match=match) as caught:
        WIRE.decode_response(data)
    assert caught.value.status == 200 and caught.value.provider == "openai-responses"


def recorded_stream() -> list[bytes]:
    """wire-openai.md 3.3's recorded sequence, with the elided middle deltas filled in.

    Sequence numbers, ids and the first two deltas of each call are as recorded (the function call
    ends at 18/19 and response.completed is 28); the split of the elided middle is ours.
    """
    first = ["{", '"query', '":"', "Detroit", " Tigers", " game", " schedule", " October", " ", "10", ",", " ",
             "202", "3", '"}']  # fmt: skip
    second = ["{", '"city', '":"', "Detroit", '"}']
    pending = {**RECORDED_RESPONSE, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": pending},
        {"type": "response.in_progress", "response": pending},
    ]
    for index, (item, deltas) in enumerate(zip(RECORDED_RESPONSE["output"], [first, second], strict=True)):
        ids = {"item_id": item["id"], "output_index": index}
        events.append({"type": "response.output_item.added", "output_index": index,
                       "item": {**item, "status": "in_progress", "arguments": ""}})  # fmt: skip
        events.extend({"type": "response.function_call_arguments.delta", **ids, "delta": d} for d in deltas)
        events.append({"type": "response.function_call_arguments.done", **ids, "arguments": item["arguments"]})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": RECORDED_RESPONSE})
    frames = []
    for number, event in enumerate(events):
        data = json.dumps({"type": event["type"], "sequence_number": number, **event}, separators=(",", ":"))
        frames.append(f"event: {event['type']}\ndata: {data}\n\n".encode())
    assert json.loads(frames[18][frames[18].index(b"{") :])["type"] == "response.function_call_arguments.done"
    assert len(frames) == 29
    return frames


def test_stream_decoder_recorded_two_call_sequence() -> None:
    events = decode_stream(recorded_stream())
    assert events[0] == ToolCallStart(0, CALL_B, "search")
    first = [e.arguments for e in events if isinstance(e, ToolCallDelta) and e.index == 0]
    assert len(first) == 15 and json.loads("".join(first)) == {"query": "Detroit Tigers game schedule October 10, 2023"}
    assert ToolCallStart(1, CALL_A, "weather") in events
    assert [e for e in events if isinstance(e, ToolCallEnd)] == [ToolCallEnd(0), ToolCallEnd(1)]
    assert events[-1] == MessageEnd(StopReason.TOOL_USE, Usage(92, 52), "gpt-4o-2024-08-06", RECORDED_RESPONSE["id"])


def test_stream_decoder_text_and_call_from_the_fake() -> None:
    turn = call_turn(text="Let me check the weather for you.", city="Paris")
    events = decode_stream(WIRE.encode_stream(turn, conversation()))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Let me check the weather for you."
    fragments = [e.arguments for e in events if isinstance(e, ToolCallDelta)]
    assert len(fragments) > 1 and json.loads("".join(fragments)) == {"city": "Paris"}
    end = events[-1]
    assert isinstance(end, MessageEnd) and end == MessageEnd(StopReason.TOOL_USE, Usage(76, 24), "gpt-4o-mini", end.id)


def test_stream_decoder_arguments_only_in_done_item_still_reach_the_loop() -> None:
    item = {**RECORDED_RESPONSE["output"][1]}
    frames = [
        b'data: {"type":"response.created","sequence_number":0,"response":{"id":"r","model":"m","output":[]}}\n\n',
        f"data: {json.dumps({'type': 'response.output_item.added', 'output_index': 0, 'item': item})}\n\n".encode(),
        f"data: {json.dumps({'type': 'response.output_item.done', 'output_index': 0, 'item': item})}\n\n".encode(),
        b'data: {"type":"response.completed","response":{"id":"r","model":"m","output":[]}}\n\n',
    ]
    events = decode_stream(frames)
    assert [e for e in events if isinstance(e, ToolCallDelta)] == [ToolCallDelta(0, '{"city":"Detroit"}')]


@pytest.mark.parametrize(
    ("frames", "match"),
    [
        ([b'event: response.created\ndata: {"type":"response.created","response":{}}\n\n'],
         r"stream that ended before response.completed \(last event: response.created\)"),
        ([b'event: error\ndata: {"type":"error","code":"server_error","message":"The server had an error."}\n\n'],
         r"The server had an error\."),
        ([b'event: message_start\ndata: {"type":"message_start"}\n\n'], r"unknown stream event type 'message_start'"),
        ([b"data: {not json\n\n"], r"stream event whose data is not JSON"),
        ([b'data: {"type":"response.function_call_arguments.delta","output_index":3,"delta":"{"}\n\n'],
         r"output_index 3 before its function_call item was added"),
        ([b'data: {"type":"response.failed","response":{"status":"failed","error":{"message":"Rate."}}}\n\n'],
         r"Rate\."),
    ],
    ids=["truncated", "error-event", "other-provider", "bad-json", "delta-before-item", "failed"],
)  # fmt: skip
def test_stream_decoder_malformed_has_clear_error(frames: list[bytes], match: str) -> None:
    with pytest.raises(ProviderError, match=match) as caught:
        decode_stream(frames)
    assert caught.value.provider == "openai-responses"


def test_stream_decoder_skips_documented_events_it_does_not_need() -> None:
    frames = WIRE.encode_stream(text_turn("ok"), conversation())
    extra = b'event: response.reasoning_summary_text.delta\ndata: {"type":"response.reasoning_summary_text.delta"}\n\n'
    events = decode_stream([frames[0], extra, *frames[1:]])
    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta("ok")]


def test_decode_error_keeps_the_message_verbatim() -> None:
    wire_error = WIRE.error(400, R1.format(CALL_A), rule=Rule.MISSING_RESULT, param="input")
    error = WIRE.decode_error(400, wire_error.body)
    assert error.message == R1.format(CALL_A) and error.error_type == "invalid_request_error"
    assert str(error) == f"openai-responses 400 invalid_request_error: {R1.format(CALL_A)}"


def test_decode_error_non_json_body_has_clear_error() -> None:
    assert WIRE.decode_error(502, b"<html>Bad gateway</html>").message == "<html>Bad gateway</html>"
    assert WIRE.decode_error(503, b"").message == "HTTP 503 with an empty body"


# -- fake side: request parsing ------------------------------------------------------------------------


def test_parse_request_groups_assistant_items_into_one_turn() -> None:
    parsed = parse(
        body(
            instructions="You are terse.",
            input=[
                USER,
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
                fc(CALL_A, id=FC_A),
                fc(CALL_B),
                fco(CALL_B, [{"type": "input_text", "text": "sunny"}]),
                fco(CALL_A),
                {"role": "developer", "content": "Be brief."},
            ],
        )
    )
    roles = [message.role for message in parsed.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "system"]
    assert parsed.paths == ["instructions", "input[0]", "input[1]", "input[4]", "input[5]", "input[6]"]
    assistant = parsed.messages[2]
    assert assistant.text() == "Checking." and [c.id for c in assistant.tool_calls()] == [CALL_A, CALL_B]
    assert assistant.tool_calls()[0].meta == {"item_id": FC_A}
    assert parsed.messages[3].tool_results()[0].content == "sunny"


def test_parse_request_plain_string_input_is_one_user_message() -> None:
    parsed = parse(body(input="Hello"))
    assert parsed.messages == [user_text("Hello")] and parsed.paths == ["input"]


def test_parse_request_pairs_by_call_id_not_adjacency() -> None:
    parsed = parse(body(input=[USER, fc(CALL_A), {"role": "user", "content": "and?"}, fco(CALL_A)]))
    assert [m.role for m in parsed.messages] == ["user", "assistant", "user", "tool"]


def test_parse_request_normalises_tools_and_tool_choice() -> None:
    tools = [{"type": "function", "name": "get_weather", "description": "d", "parameters": None, "strict": True},
             {"type": "web_search_preview"}]  # fmt: skip
    parsed = parse(body(input="hi", tools=tools, tool_choice={"type": "function", "name": "get_weather"}, stream=True))
    assert parsed.tools == [Tool("get_weather", "d")]
    assert parsed.tool_choice == "get_weather" and parsed.forced_tool_choice and parsed.stream


def test_parse_request_accepts_sdk_dumps_of_its_own_output() -> None:
    """Replaying `response.output` items dumped by the SDK (status, annotations, logprobs...) is legal."""
    from openai.types.responses import Response as SDKResponse

    turn = call_turn(text="Checking.")
    sdk_response = SDKResponse.model_validate(WIRE.encode_response(turn, conversation()))
    for exclude_none in (False, True):
        replay = [
            USER,
            *(item.model_dump(exclude_none=exclude_none) for item in sdk_response.output),
            fco(turn.message.tool_calls()[0].id),
        ]
        parsed = parse(body(input=replay))
        assert parsed.messages[1].tool_calls() == turn.message.tool_calls()
        assert parsed.messages[1].text() == "Checking."


def test_round_trip_encode_request_then_parse_request_keeps_every_call_and_result() -> None:
    messages = [
        user_text("Weather in Paris and Rome?"),
        Message("assistant", [Text("Both."),
                              ToolCall("call_1", "get_weather", {"city": "Paris"}, meta={"item_id": "fc_1"}),
                              ToolCall("call_2", "get_weather", {"city": "Rome", "units": ["c"]})]),
        tool_result_message("call_1", "18C"),
        tool_result_message("call_2", "Error: no data"),
        assistant_text("Paris is 18C."),
        user_text("Thanks"),
    ]  # fmt: skip
    request = Request(model="m", system="Be terse.", messages=messages, tools=[WEATHER], tool_choice="required")
    parsed = parse(json.dumps(WIRE.encode_request(request, stream=False, api_key=None).json).encode())
    assert parsed.messages == [Message("system", [Text("Be terse.")]), *messages]
    assert parsed.messages[2].tool_calls()[0].meta == {"item_id": "fc_1"}
    assert parsed.tools == [WEATHER] and parsed.tool_choice == "required"


# -- fake side: validation rules ---------------------------------------------------------------------------


def test_non_json_body_has_clear_error() -> None:
    error = rejection(b"model=gpt-4o&input=hi")
    assert error.status == 400 and error.rule is Rule.MALFORMED
    assert json.loads(error.body) == {
        "error": {"message": NON_JSON_MESSAGE, "type": "invalid_request_error", "param": None, "code": None}
    }
    # Two-space indents, as a relayed real Responses error body shows them.
    assert error.body.startswith(b'{\n  "error": {\n    "message": "We could not parse the JSON body')


@pytest.mark.parametrize("data", [b"[" * 100_000, b'{"model":"m","input":"hi","temperature":NaN}', b"\xff\xfe{"])
def test_non_json_edge_cases_have_clear_error(data: bytes) -> None:
    assert rejection(data).message == NON_JSON_MESSAGE


def test_missing_result_r1_names_the_first_unanswered_call() -> None:
    error = rejection(body(input=[USER, fc(CALL_A), fc(CALL_B), fco(CALL_B)]))
    assert error.message == R1.format(CALL_A)
    assert (error.status, error.rule, error.message_index) == (400, Rule.MISSING_RESULT, 1)
    assert envelope(error) == {"message": R1.format(CALL_A), "type": "invalid_request_error", "param": "input",
                               "code": None}  # fmt: skip


def test_result_for_a_turn_rebuilt_as_text_r2_has_clear_error() -> None:
    rebuilt = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]}
    error = rejection(body(instructions="x", input=[USER, rebuilt, fco(CALL_A)]))
    assert error.message == R2.format(CALL_A) and envelope(error)["param"] == "input"
    assert (error.rule, error.message_index) == (Rule.RESULT_WITHOUT_TURN, 3)


def test_result_before_its_call_is_r2() -> None:
    error = rejection(body(input=[USER, fco(CALL_A), fc(CALL_A)]))
    assert error.message == R2.format(CALL_A) and error.rule is Rule.RESULT_WITHOUT_TURN


def test_result_with_an_id_nobody_called_is_unknown_call_id() -> None:
    error = rejection(body(input=[USER, fc(CALL_A), fco(CALL_A), fco("call_typo")]))
    assert error.message == R2.format("call_typo") and error.rule is Rule.UNKNOWN_CALL_ID
    assert error.message_index == 3


def test_r2_is_reported_before_r1() -> None:
    assert rejection(body(input=[USER, fc(CALL_A), fco(CALL_B)])).message == R2.format(CALL_B)


def test_duplicate_item_r3_has_clear_error() -> None:
    fc_b = "fc_" + "b" * 48
    calls = [fc(CALL_A, id=FC_A), fc(CALL_B, id=fc_b)]
    error = rejection(body(input=[USER, *calls, fco(CALL_A), fco(CALL_B), fc(CALL_A, id=FC_A), fco(CALL_A)]))
    assert (
        error.message == f"Duplicate item found with id {FC_A}. Remove duplicate items from your input and try again."
    )
    assert envelope(error)["param"] == "input" and error.message_index == 4


def test_call_id_reused_in_a_later_turn_pairs_with_its_own_output() -> None:
    parsed = parse(body(input=[USER, fc("call_0"), fco("call_0"), fc("call_0"), fco("call_0")]))
    assert [m.role for m in parsed.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert rejection(body(input=[USER, fc("call_0"), fco("call_0"), fc("call_0")])).message == R1.format("call_0")


def test_duplicate_output_for_one_call_has_clear_error() -> None:
    error = rejection(body(input=[USER, fc(CALL_A), fc(CALL_B), fco(CALL_A), fco(CALL_B), fco(CALL_A)]))
    assert error.message == (
        f"Duplicate function_call_output for call_id '{CALL_A}'. Each function_call must have exactly one "
        "matching function_call_output"
    )
    assert (error.rule, error.message_index) == (Rule.DUPLICATE_RESULT, 4)


def tokens(n: int) -> str:
    return "call_" + "x" * (n - 5)


@pytest.mark.parametrize(
    ("items", "message", "param", "code"),
    [
        ([USER, fc(""), fco("")], "Invalid 'input[1].call_id': empty string. Expected a string with minimum length 1, "
         "but got an empty string instead.", "input[1].call_id", "empty_string"),
        ([USER, fc(tokens(86))], "Invalid 'input[1].call_id': string too long. Expected a string with maximum "
         "length 64, but got a string with length 86 instead.", "input[1].call_id", "string_above_max_length"),
        ([USER, {"type": "function_call", "call_id": CALL_A, "name": "f"}],
         "Missing required parameter: 'input[1].arguments'.", "input[1].arguments", "missing_required_parameter"),
        ([USER, {"type": "function_call_output", "output": "x"}],
         "Missing required parameter: 'input[1].call_id'.", "input[1].call_id", "missing_required_parameter"),
        ([USER, fc(CALL_A, id=CALL_A), fco()], f"Invalid 'input[1].id': '{CALL_A}'. Expected an ID that begins "
         "with 'fc'.", "input[1].id", "invalid_value"),
        ([USER, {"role": "tool", "tool_call_id": CALL_A, "content": "x"}], "Invalid value: 'tool'. Supported values "
         "are: 'assistant', 'system', 'developer', and 'user'.", "input[1]", "invalid_value"),
        ([{"role": "user"}], "Missing required parameter: 'input[0].content'.", "input[0].content",
         "missing_required_parameter"),
        ([{"role": "assistant", "content": [{"type": "input_text", "text": "x"}]}], "Invalid value: 'input_text'. "
         "Supported values are: 'output_text' and 'refusal'.", "input[0].content[0]", "invalid_value"),
        ([{"role": "user", "content": ["hi"]}], "Invalid type for 'input[0].content[0]': expected an object, but got "
         "a string instead.", "input[0].content[0]", "invalid_type"),
        ([None], "Invalid type for 'input[0]': expected an input item, but got null instead.", "input[0]",
         "invalid_type"),
        ([USER, fc(CALL_A, arguments={"city": "Paris"})], "Invalid type for 'input[1].arguments': expected a string, "
         "but got an object instead.", "input[1].arguments", "invalid_type"),
    ],
    ids=["R6-empty-call-id", "R7-long-call-id", "R8-no-arguments", "R8-output-no-call-id", "call-id-as-item-id",
         "chat-tool-role", "no-content", "assistant-input-text", "string-part", "null-item", "arguments-object"],
)  # fmt: skip
def test_input_item_schema_has_clear_error(items: list[Any], message: str, param: str, code: str) -> None:
    error = rejection(body(input=items))
    assert error.message == message and error.rule is Rule.MALFORMED
    assert envelope(error) == {"message": message, "type": "invalid_request_error", "param": param, "code": code}


@pytest.mark.parametrize(
    ("fields", "message", "param", "code"),
    [
        ({"model": None}, "Invalid type for 'model': expected a string, but got an object instead.", "model",
         "invalid_type"),
        ({"input": None}, "Invalid type for 'input': expected a string, but got an object instead.", "input",
         "invalid_type"),
        ({"input": 7}, "Invalid type for 'input': expected one of a string or array of input items, but got an "
         "integer instead.", "input", "invalid_type"),
        ({"input": "hi", "max_tokens": 5}, "Unknown parameter: 'max_tokens'.", "max_tokens", "unknown_parameter"),
        ({"input": "hi", "stop": ["x"]}, "Unknown parameter: 'stop'. Did you mean 'store'?", "stop",
         "unknown_parameter"),
        ({"input": "hi", "stre": 1}, "Unknown parameter: 'stre'. Did you mean 'store' or 'stream'?", "stre",
         "unknown_parameter"),
        ({"input": "hi", "messages": []}, "Unsupported parameter: 'messages'. In the Responses API, this parameter "
         "has moved to 'input'. Try again with the new parameter. See the API documentation for more information: "
         "https://platform.openai.com/docs/api-reference/responses/create.", None, "unsupported_parameter"),
        ({"input": "hi", "tools": [{"type": "function", "function": {"name": "f"}}]},
         "Missing required parameter: 'tools[0].name'.", "tools[0].name", "missing_required_parameter"),
        ({"input": "hi", "tools": [{"type": "function", "name": "get weather"}]}, "Invalid 'tools[0].name': string "
         "does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", "tools[0].name",
         "invalid_value"),
        ({"input": "hi", "tool_choice": {"type": "function", "function": {"name": "f"}}},
         "Missing required parameter: 'tool_choice.name'.", "tool_choice.name", "missing_required_parameter"),
        ({"input": "hi", "tool_choice": "any"}, "Invalid value: 'any'. Supported values are: 'none', 'auto', and "
         "'required'.", "tool_choice", "invalid_value"),
        ({"input": "hi", "stream": "yes"}, "Invalid type for 'stream': expected a boolean, but got a string instead.",
         "stream", "invalid_type"),
        ({"input": "hi", "max_output_tokens": 8}, "Invalid 'max_output_tokens': integer below minimum value. "
         "Expected a value >= 16, but got 8 instead.", "max_output_tokens", "integer_below_min_value"),
        ({"input": "hi", "previous_response_id": "resp_x"}, "Previous response with id 'resp_x' not found.",
         "previous_response_id", "previous_response_not_found"),
        ({"input": []}, "One of \"input\" or \"previous_response_id\" or 'prompt' or 'conversation' must be "
         "provided.", None, "missing_required_parameter"),
        ({"input": "hi", "previous_response_id": "resp_x", "conversation": "conv_1"}, "Mutually exclusive "
         "parameters: Ensure you are only providing one of: 'previous_response_id' or 'conversation'.", None,
         "mutually_exclusive_parameters"),
    ],
    ids=["model-null", "input-null", "input-int", "chat-max-tokens", "stop-suggests-store", "two-suggestions",
         "chat-messages", "chat-shaped-tool", "tool-name-pattern", "chat-tool-choice", "tool-choice-any",
         "stream-type", "max-output-tokens-min", "previous-response", "empty-input",
         "two-histories"],
)  # fmt: skip
def test_top_level_schema_has_clear_error(fields: dict[str, Any], message: str, param: str | None, code: str) -> None:
    error = rejection(body(**fields))
    assert (error.status, error.message) == (400, message)
    assert envelope(error) == {"message": message, "type": "invalid_request_error", "param": param, "code": code}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (json.dumps({"input": "hi"}).encode(), "Missing required parameter: 'model'."),
        (body(bogus=1), "Missing required parameter: 'input'."),
        (body(input=7, store="x"), "Invalid type for 'input': expected one of a string or array of input items, "
         "but got an integer instead."),
        (body(input=[], zzz=1), "Unknown parameter: 'zzz'."),
        (body(input=[USER, fc(CALL_A)], stream="x"), "Invalid type for 'stream': expected a boolean, but got a "
         "string instead."),
    ],
    ids=["model-first", "input-before-unknown", "input-before-fields", "unknown-before-empty", "schema-before-R1"],
)  # fmt: skip
def test_validation_order_follows_the_api(data: bytes, message: str) -> None:
    assert rejection(data).message == message


def test_non_object_body_has_clear_error() -> None:
    error = rejection(b"[]")
    assert error.message == "Invalid type for 'body': expected an object, but got an array instead."


def test_unknown_conversation_is_a_404() -> None:
    error = rejection(body(input="hi", conversation="conv_1"))
    assert (error.status, error.message) == (404, "Conversation with id 'conv_1' not found.")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
KEYS = st.sampled_from(["model", "input", "tools", "tool_choice", "type", "role", "content", "call_id", "name",
                        "arguments", "output", "id", "text", "stream", "instructions", "parameters"])  # fmt: skip


def valid_body() -> dict[str, Any]:
    return {
        "model": "m", "instructions": "x", "stream": False,
        "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
        "tool_choice": {"type": "function", "name": "get_weather"},
        "input": [USER, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]},
                  fc(CALL_A, id=FC_A), fco(CALL_A, [{"type": "input_text", "text": "b"}])],
    }  # fmt: skip


def mutate(data: Any, path: list[int], key: str, value: Any) -> Any:
    """Replace or add one value somewhere inside `data`, steered by `path`."""
    if not path or not isinstance(data, (dict, list)) or not data:
        return value
    if isinstance(data, dict):
        target = list(data)[path[0] % len(data)] if path[0] % 3 else key
        return {**data, target: mutate(data.get(target), path[1:], key, value)}
    index = path[0] % len(data)
    return [*data[:index], mutate(data[index], path[1:], key, value), *data[index + 1 :]]


def parses_or_rejects(data: bytes) -> None:
    try:
        parse(data)
    except ErrorResponse as error:
        assert 400 <= error.status < 500 and json.loads(error.body)["error"]["message"] == error.message


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON)
def test_parse_request_random_json_never_crashes(value: Any) -> None:
    parses_or_rejects(json.dumps(value).encode())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(0, 50), max_size=5), KEYS, JSON)
def test_parse_request_mutated_valid_bodies_never_crash(path: list[int], key: str, value: Any) -> None:
    parses_or_rejects(json.dumps(mutate(valid_body(), path, key, value)).encode())


def test_valid_body_used_by_the_mutation_test_is_accepted() -> None:
    assert len(parse(json.dumps(valid_body()).encode()).messages) == 4


# -- fake side: response encoding ------------------------------------------------------------------------


def test_encode_response_has_every_sdk_required_field() -> None:
    from openai.types.responses import Response as SDKResponse

    data = WIRE.encode_response(call_turn(text="Checking."), conversation())
    required = {name for name, f in SDKResponse.model_fields.items() if f.is_required()}
    assert required <= set(data) and data["object"] == "response" and data["status"] == "completed"
    assert data["usage"] == {"input_tokens": 76, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                             "output_tokens": 24, "output_tokens_details": {"reasoning_tokens": 0},
                             "total_tokens": 100}  # fmt: skip
    message, call = data["output"]
    assert message["content"] == [{"type": "output_text", "annotations": [], "logprobs": [], "text": "Checking."}]
    assert call["arguments"] == '{"city":"Paris"}' and call["call_id"] == WIRE.call_id("weather:1")
    assert data["tools"] == [{"type": "function", "description": None, "name": "get_weather",
                              "parameters": {"type": "object", "properties": {}}, "strict": True}]  # fmt: skip


def test_encode_response_ids_have_the_real_formats() -> None:
    data = WIRE.encode_response(call_turn(text="x"), conversation())
    hex48 = r"[0-9a-f]{48}"
    assert re.fullmatch(f"resp_{hex48}", data["id"])
    assert re.fullmatch(f"msg_{hex48}", data["output"][0]["id"])
    assert re.fullmatch(f"fc_{hex48}", data["output"][1]["id"])
    assert re.fullmatch(r"call_[A-Za-z0-9]{24}", WIRE.call_id("weather:1"))


@pytest.mark.parametrize(
    ("turn", "status", "details"),
    [
        (text_turn(stop=StopReason.MAX_TOKENS), "incomplete", {"reason": "max_output_tokens"}),
        (ModelTurn(assistant_text("x"), StopReason.END_TURN, seed="s", raw_stop_reason="content_filter"),
         "incomplete", {"reason": "content_filter"}),
        (ModelTurn(assistant_text("x"), StopReason.END_TURN, seed="s", raw_stop_reason="completed"), "completed",
         None),
    ],
    ids=["max-tokens", "raw-reason", "raw-status"],
)  # fmt: skip
def test_encode_response_status_mapping(turn: ModelTurn, status: str, details: Any) -> None:
    data = WIRE.encode_response(turn, conversation())
    assert (data["status"], data["incomplete_details"]) == (status, details)


def test_encode_response_refusal_turn_round_trips_as_refusal() -> None:
    data = WIRE.encode_response(text_turn("I can't help with that.", StopReason.REFUSAL), conversation())
    assert data["output"][0]["content"] == [{"type": "refusal", "refusal": "I can't help with that."}]
    assert WIRE.decode_response(data).stop_reason is StopReason.REFUSAL


def test_encode_stream_follows_the_documented_event_order() -> None:
    turn = call_turn(text="Checking.")
    events = sse_events(WIRE.encode_stream(turn, conversation()))
    assert [e["type"] for e in events] == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.content_part.added", "response.output_text.delta",
        "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
        "response.content_part.done", "response.output_item.done",
        "response.output_item.added", *["response.function_call_arguments.delta"] * 4,
        "response.function_call_arguments.done", "response.output_item.done", "response.completed",
    ]  # fmt: skip
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[-1]["response"] == WIRE.encode_response(turn, conversation())
    assert events[0]["response"]["status"] == "in_progress" and events[0]["response"]["output"] == []
    # The real event has no `name` (openai 3.57 ResponseFunctionCallArgumentsDoneEvent).
    assert set(events[-3]) == {"type", "sequence_number", "item_id", "output_index", "arguments"}
    assert events[-3]["arguments"] == '{"city":"Paris"}'


def test_encode_stream_framing_is_event_and_data_without_done() -> None:
    frames = WIRE.encode_stream(text_turn(), conversation())
    for frame in frames:
        head, data = frame.decode().split("\n", 1)
        assert head.startswith("event: ") and data.startswith("data: ") and frame.endswith(b"\n\n")
        assert json.loads(data[6:])["type"] == head[7:]
    assert b"[DONE]" not in b"".join(frames)


def test_encode_stream_max_tokens_ends_with_response_incomplete() -> None:
    events = sse_events(WIRE.encode_stream(text_turn(stop=StopReason.MAX_TOKENS), conversation()))
    assert events[-1]["type"] == "response.incomplete"
    assert decode_stream(WIRE.encode_stream(text_turn(stop=StopReason.MAX_TOKENS), conversation()))[-1] == MessageEnd(
        StopReason.MAX_TOKENS, Usage(90, 9), "gpt-4o-mini", events[-1]["response"]["id"]
    )


DIGEST_SCRIPT = """
import hashlib, json
from sandbox.messages._types import Message, StopReason, Text, ToolCall, Usage
from sandbox.wire import ModelTurn
from sandbox.wire.openai_responses import WIRE
conv = WIRE.parse_request(b'{"model": "gpt-4o-mini", "input": "hi"}', path_model=None, path_stream=False)
turn = ModelTurn(Message("assistant", [Text("Checking."), ToolCall(WIRE.call_id("d:1"), "f", {"a": [1, "é"]})]),
                 StopReason.TOOL_USE, seed="d:1", usage=Usage(3, 4))
data = b"".join(WIRE.encode_stream(turn, conv)) + json.dumps(WIRE.encode_response(turn, conv)).encode()
print(hashlib.sha256(data).hexdigest())
"""


def test_encode_is_byte_identical_across_calls_and_processes() -> None:
    conv = parse(b'{"model": "gpt-4o-mini", "input": "hi"}')
    turn = ModelTurn(
        Message("assistant", [Text("Checking."), ToolCall(WIRE.call_id("d:1"), "f", {"a": [1, "é"]})]),
        StopReason.TOOL_USE,
        seed="d:1",
        usage=Usage(3, 4),
    )
    assert WIRE.encode_stream(turn, conv) == WIRE.encode_stream(turn, conv)
    here = hashlib.sha256(
        b"".join(WIRE.encode_stream(turn, conv)) + json.dumps(WIRE.encode_response(turn, conv)).encode()
    ).hexdigest()
    other = subprocess.run([sys.executable, "-c", DIGEST_SCRIPT], capture_output=True, text=True, check=True)
    assert other.stdout.strip() == here


# -- the official SDK as judge -------------------------------------------------------------------------------


def test_sdk_create_parses_the_fake_response() -> None:
    client = sdk_client(call_turn(text="Checking."))
    response = client.responses.create(model="gpt-4o-mini", input="Weather in Paris?", tools=[SDK_TOOL])
    call = response.output[1]
    assert call.type == "function_call" and call.name == "get_weather"
    assert json.loads(call.arguments) == {"city": "Paris"} and call.call_id == WIRE.call_id("weather:1")
    assert response.output_text == "Checking."
    assert response.usage is not None and response.usage.input_tokens_details.cached_tokens == 0
    assert response.usage.input_tokens_details.cache_write_tokens == 0 and response.usage.total_tokens == 100


def test_sdk_create_stream_yields_typed_events_in_order() -> None:
    client = sdk_client(call_turn(text="Hi."))
    events = list(client.responses.create(model="gpt-4o-mini", input="Weather?", tools=[SDK_TOOL], stream=True))
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    arguments = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert json.loads(arguments) == {"city": "Paris"}
    completed = events[-1]
    assert completed.type == "response.completed"
    call = completed.response.output[1]
    assert call.type == "function_call" and call.call_id == WIRE.call_id("weather:1")


def test_sdk_stream_helper_builds_the_final_response() -> None:
    client = sdk_client(call_turn(text="Let me look that up."))
    with client.responses.stream(model="gpt-4o-mini", input="Weather?", tools=[SDK_TOOL]) as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert text == "Let me look that up." and final.output_text == "Let me look that up."
    assert [item.type for item in final.output] == ["message", "function_call"]


def test_sdk_tool_loop_replaying_its_own_output_is_accepted() -> None:
    seen: list[Conversation] = []
    client = sdk_client(call_turn(text="Checking."), text_turn(), seen=seen)
    history: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    first = client.responses.create(model="gpt-4o-mini", input=history, tools=[SDK_TOOL])
    history += first.output
    history += [{"type": "function_call_output", "call_id": item.call_id, "output": "18C"}
                for item in first.output if item.type == "function_call"]  # fmt: skip
    second = client.responses.create(model="gpt-4o-mini", input=history, tools=[SDK_TOOL])
    assert second.output_text == "It's 18C and clear."
    replayed = seen[1].messages[1].tool_calls()
    assert replayed == call_turn().message.tool_calls() and replayed[0].meta["item_id"] == first.output[1].id


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (lambda out: [*out], R1.format(WIRE.call_id("weather:1"))),
        (lambda out: [{"role": "assistant", "content": "Checking."},
                      fco(WIRE.call_id("weather:1"))], R2.format(WIRE.call_id("weather:1"))),
    ],
    ids=["R1-no-output", "R2-turn-rebuilt-as-text"],
)  # fmt: skip
def test_sdk_ordering_mistake_raises_bad_request_with_the_verbatim_text(
    mistake: Callable[[list[Any]], list[Any]], message: str
) -> None:
    client = sdk_client(call_turn(text="Checking."))
    first = client.responses.create(model="gpt-4o-mini", input="Weather?", tools=[SDK_TOOL])
    history = [{"role": "user", "content": "Weather?"}, *mistake(list(first.output))]
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="gpt-4o-mini", input=history, tools=[SDK_TOOL])
    assert caught.value.status_code == 400 and str(caught.value) == f"Error code: 400 - {message}"
    assert (caught.value.param, caught.value.code, caught.value.type) == ("input", None, "invalid_request_error")
    assert isinstance(caught.value.body, dict) and caught.value.body["message"] == message
