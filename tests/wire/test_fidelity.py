"""The figures and shapes a client reads, against real recordings of reasoning-era traffic.

Each test cites the recording it holds the sandbox to (PA = pydantic/pydantic-ai
`tests/models/cassettes/`, VA = vercel/ai `packages/`); none is copied here. Values that differ by
nature (ids' random digits, text, timestamps) are compared by shape; the token figures follow the
README's "Usage figures" rule: 4 characters a token, thinking included in the output.
"""

from __future__ import annotations

import base64
import json
import re
import string
from typing import Any

import pytest

import sandbox
from sandbox import Engine, skyl
from sandbox.wire import get_wire_format
from sandbox.wire._base import CREATED_AT
from tests.conftest import scenario_request, scripted_run

SCENARIO = "multi_step_reasoning"
FIRST_THOUGHT = sandbox.get_scenario(SCENARIO).steps[0].thought()
FIRST_THINKING_TOKENS = -(-len(FIRST_THOUGHT) // 4)
ALPHANUMERIC = set(string.ascii_letters + string.digits)


def _body(provider: str, *, stream: bool = False, scenario: str = SCENARIO) -> dict[str, Any]:
    request = scenario_request(scenario)
    request.reasoning = True
    return get_wire_format(provider).encode_request(request, stream=stream, api_key=None).json


def _send(
    provider: str, body: dict[str, Any], *, path: str | None = None, engine: Engine | None = None
) -> sandbox.Exchange:
    if path is None:
        path = {"openai-responses": "/v1/responses", "anthropic": "/v1/messages"}[provider]
    exchange = (engine or Engine()).handle("POST", path, json.dumps(body).encode())
    assert exchange.status == 200, exchange.body.decode()
    return exchange


def _events(exchange: sandbox.Exchange) -> list[dict[str, Any]]:
    return [
        json.loads(line[6:])
        for chunk in exchange.chunks
        for line in chunk.decode().splitlines()
        if line.startswith("data: ")
    ]


def _gemini(body: dict[str, Any], *, stream: bool = False) -> sandbox.Exchange:
    method = "streamGenerateContent" if stream else "generateContent"
    return _send("gemini", body, path=f"/v1beta/models/{SCENARIO}:{method}")


def _fields(blob: bytes) -> list[tuple[int, bytes | int]]:
    """A protobuf message's top-level fields; raises on a length that runs past the end."""
    fields: list[tuple[int, bytes | int]] = []
    index = 0

    def varint() -> int:
        nonlocal index
        number = shift = 0
        while True:
            byte = blob[index]
            index += 1
            number |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return number

    while index < len(blob):
        key = varint()
        if key & 7 == 0:
            fields.append((key >> 3, varint()))
        else:
            assert key & 7 == 2, f"wire type {key & 7}"
            size = varint()
            assert index + size <= len(blob), "a length past the end"
            fields.append((key >> 3, blob[index : index + size]))
            index += size
    return fields


# -- OpenAI Responses ------------------------------------------------------------------------------


def test_responses_usage_counts_the_reasoning_tokens() -> None:
    """PA `test_openai_responses/test_openai_responses_model_thinking_part.yaml`: every turn with a
    reasoning item reports its `reasoning_tokens` (1,920 and 2,112), within `output_tokens`."""
    usage = json.loads(_send("openai-responses", _body("openai-responses")).body)["usage"]
    assert usage["output_tokens_details"] == {"reasoning_tokens": FIRST_THINKING_TOKENS}
    assert usage["output_tokens"] > FIRST_THINKING_TOKENS
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


@pytest.mark.parametrize(
    ("asked", "echoed"),
    [
        ({"effort": "high", "summary": "detailed"}, {"effort": "high", "summary": "detailed"}),
        ({"summary": "auto"}, {"effort": "medium", "summary": "auto"}),
        (None, {"effort": "medium", "summary": None}),
    ],
    ids=["effort-and-summary", "summary-only", "nothing-asked"],
)
def test_responses_echo_the_reasoning_settings(asked: dict[str, str] | None, echoed: dict[str, Any]) -> None:
    """PA `test_openai_responses_model_thinking_part.yaml` asks `{effort: high, summary: detailed}`
    and reads the same back (VA `openai-reasoning-encrypted-content.1.chunks.txt` likewise)."""
    body = _body("openai-responses")
    body.pop("reasoning", None)
    if asked is not None:
        body["reasoning"] = asked
    assert json.loads(_send("openai-responses", body).body)["reasoning"] == echoed


def test_responses_without_reasoning_report_null_settings() -> None:
    body = _body("openai-responses", scenario="single_call")
    del body["reasoning"]
    assert json.loads(_send("openai-responses", body).body)["reasoning"] == {"effort": None, "summary": None}


def test_responses_ids_of_one_response_share_their_structure() -> None:
    """PA `test_openai_responses_model_thinking_part.yaml`: `resp_68c42c90...07460311b0c8d3de`,
    `rs_68c42c90...07460311b0c8d3de`, `msg_68c42cb1...07460311b0c8d3de`: 48 hex digits, the first 8
    `created_at` in hex, digits 13-16 and the last 16 shared by the response and its items."""
    response = json.loads(_send("openai-responses", _body("openai-responses")).body)
    ids = [response["id"], *(item["id"] for item in response["output"])]
    assert [identifier.split("_")[0] for identifier in ids] == ["resp", "rs", "fc"]
    digits = [identifier.split("_", 1)[1] for identifier in ids]
    assert all(re.fullmatch("[0-9a-f]{48}", part) for part in digits), ids
    assert {part[:8] for part in digits} == {f"{response['created_at']:08x}"}
    assert len({part[12:16] for part in digits}) == 1 and len({part[-16:] for part in digits}) == 1
    assert len({part[8:12] + part[16:32] for part in digits}) == 3  # and each its own


def test_responses_encrypted_content_is_a_fernet_token_of_real_size() -> None:
    """PA `test_openai_responses_model_thinking_part.yaml` (about 12,000 characters for 2,000
    reasoning tokens) and VA `openai-reasoning-encrypted-content.1.chunks.txt` (1,100-1,800 for a
    short thought): `gAAAAAB...`, a Fernet token."""
    item = json.loads(_send("openai-responses", _body("openai-responses")).body)["output"][0]
    content = item["encrypted_content"]
    assert content.startswith("gAAAAAB") and 1_100 <= len(content) <= 12_000
    token = base64.urlsafe_b64decode(content)
    assert token[0] == 0x80 and int.from_bytes(token[1:9], "big") == CREATED_AT
    assert (len(token) - 1 - 8 - 16 - 32) % 16 == 0  # IV, whole cipher blocks, HMAC


def test_responses_stream_deltas_carry_obfuscation_padding_them_to_16() -> None:
    """VA `openai/src/responses/__fixtures__/issue-19493-gpt-5.1-tool-call.chunks.txt` (argument
    deltas) and `openai-reasoning-encrypted-content.1.chunks.txt` (summary deltas): each delta
    arrives with an `obfuscation` of letters and digits, the two together 16 characters long."""
    events = _events(_send("openai-responses", _body("openai-responses", stream=True)))
    deltas = [event for event in events if "delta" in event]
    assert {event["type"] for event in deltas} >= {
        "response.reasoning_summary_text.delta",
        "response.function_call_arguments.delta",
    }
    for event in deltas:
        assert set(event["obfuscation"]) <= ALPHANUMERIC
        assert (len(event["delta"]) + len(event["obfuscation"])) % 16 == 0, event
    assert len({event["obfuscation"] for event in deltas}) > 1


def test_responses_stream_without_obfuscation_when_the_request_turns_it_off() -> None:
    body = {**_body("openai-responses", stream=True), "stream_options": {"include_obfuscation": False}}
    events = _events(_send("openai-responses", body))
    assert not [event for event in events if "obfuscation" in event]


# -- Anthropic -------------------------------------------------------------------------------------


def test_anthropic_usage_is_the_current_shape_with_the_thinking_broken_out() -> None:
    """The non-streamed usage of 2026 (VA `anthropic/src/__fixtures__/issue-13430-thinking-tool-call.json`,
    claude-sonnet-4-6) keeps `cache_creation`, which the older PA
    `test_anthropic_extended_thinking_with_tool_use.yaml` (claude-sonnet-4) predates, and breaks the
    thinking out in `output_tokens_details.thinking_tokens`, within `output_tokens`."""
    usage = json.loads(_send("anthropic", _body("anthropic")).body)["usage"]
    assert list(usage) == [
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "cache_creation",
        "output_tokens",
        "output_tokens_details",
        "service_tier",
    ]
    assert usage["output_tokens_details"] == {"thinking_tokens": FIRST_THINKING_TOKENS}
    assert usage["output_tokens"] > FIRST_THINKING_TOKENS


def test_anthropic_without_thinking_reports_no_thinking_tokens() -> None:
    body = _body("anthropic")
    del body["thinking"]
    usage = json.loads(_send("anthropic", body).body)["usage"]
    assert "output_tokens_details" not in usage


def test_anthropic_signature_is_length_prefixed_and_of_real_size() -> None:
    """PA `test_anthropic/test_anthropic_extended_thinking_with_tool_use.yaml`: signatures of 628 to
    2,900 characters, base64 of field 2 (a 70-byte header, a 12- and a 12-byte nonce, 48 bytes,
    the ciphertext), then field 3 = 1."""
    block = json.loads(_send("anthropic", _body("anthropic")).body)["content"][0]
    assert block["type"] == "thinking" and 628 <= len(block["signature"]) <= 2_900
    outer = _fields(base64.b64decode(block["signature"], validate=True))
    assert [number for number, _ in outer] == [2, 3] and outer[1][1] == 1
    inner = outer[0][1]
    assert isinstance(inner, bytes)
    parts = _fields(inner)
    assert [number for number, _ in parts] == [1, 2, 3, 4, 5]
    assert [len(value) for _, value in parts[:4] if isinstance(value, bytes)] == [70, 12, 12, 48]


def test_anthropic_stream_sends_an_empty_thinking_delta_before_the_signature() -> None:
    """PA `test_anthropic/test_anthropic_model_thinking_part_stream.yaml`: the last `thinking_delta`
    is empty, just before the block's `signature_delta`."""
    deltas = [
        event["delta"]
        for event in _events(_send("anthropic", _body("anthropic", stream=True)))
        if event["type"] == "content_block_delta" and event["index"] == 0
    ]
    assert deltas[-2] == {"type": "thinking_delta", "thinking": ""}
    assert deltas[-1]["type"] == "signature_delta"
    assert "".join(delta.get("thinking", "") for delta in deltas) == FIRST_THOUGHT


# -- Gemini 3 --------------------------------------------------------------------------------------


def test_gemini_usage_counts_the_thoughts_apart_and_in_the_total() -> None:
    """PA `test_google/test_google_streaming_tool_call_thought_signature.yaml` (gemini-3-pro-preview):
    `thoughtsTokenCount` 110, `totalTokenCount` 149 = 29 prompt + 10 candidates + 110 thoughts; PA
    `test_google_instructions_only_with_tool_calls.yaml` (gemini-3-flash-preview): 83 + 30 + 292 = 405."""
    usage = json.loads(_gemini(_body("gemini")).body)["usageMetadata"]
    assert usage["thoughtsTokenCount"] == FIRST_THINKING_TOKENS
    assert usage["totalTokenCount"] == usage["promptTokenCount"] + usage["candidatesTokenCount"] + FIRST_THINKING_TOKENS


def test_gemini_answer_without_thoughts_has_no_thoughts_count() -> None:
    """The same cassette's second answer (text, no thought parts asked for) carries no `thoughtsTokenCount`."""
    client = skyl.Client("gemini", transport=sandbox.transport())
    request = scenario_request("single_call_reasoning")
    run = scripted_run("single_call_reasoning")
    first = client.complete(request)
    request.messages += [first.message, *(skyl.tool_result_message(call.id, run(call)) for call in first.tool_calls())]
    final = client.complete(request)
    assert first.raw["usageMetadata"]["thoughtsTokenCount"] > 0
    assert "thoughtsTokenCount" not in final.raw["usageMetadata"]


def test_gemini_thought_signature_has_a_valid_inner_length_and_real_size() -> None:
    """The same cassette: a `thoughtSignature` of 816 characters (644 to 1,424 in PA
    `test_google_instructions_only_with_tool_calls.yaml`): field 2 holding field 1, each length
    valid, the payload opening with 0x01."""
    parts = json.loads(_gemini(_body("gemini")).body)["candidates"][0]["content"]["parts"]
    signature = next(part["thoughtSignature"] for part in parts if "thoughtSignature" in part)
    assert 644 <= len(signature) <= 1_424
    (number, inner), *rest = _fields(base64.b64decode(signature, validate=True))
    assert number == 2 and not rest and isinstance(inner, bytes)
    (number, payload), *rest = _fields(inner)
    assert number == 1 and not rest and isinstance(payload, bytes) and payload[0] == 0x01


def test_gemini_response_id_is_23_characters() -> None:
    """The same cassette: `SVV8aY6uBqe6qtsPmJbEuAM`, `S1V8aZK2NpGKqtsPvPuEqAw`; and
    `1CeCacWzHryxqtsPxIGRyAI` in PA `test_google_instructions_only_with_tool_calls.yaml`."""
    response_id = json.loads(_gemini(_body("gemini")).body)["responseId"]
    assert len(response_id) == 23 and re.fullmatch("[A-Za-z0-9_-]+", response_id)


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "not-streamed"])
def test_gemini_answer_carries_the_recorded_headers(stream: bool) -> None:
    """The same cassette, both streamed answers: `content-disposition: attachment`,
    `server-timing: gfet4t7; dur=...`, `vary: Origin, X-Origin, Referer`; a second recording, PA
    `test_google/test_google_instructions_only_with_tool_calls.yaml`, not streamed: the last two only."""
    headers = _gemini(_body("gemini"), stream=stream).headers
    assert headers.get("content-disposition") == ("attachment" if stream else None)
    assert re.fullmatch(r"gfet4t7; dur=\d+", headers["server-timing"])
    assert headers["vary"] == "Origin, X-Origin, Referer"


def test_gemini_function_response_given_as_text_parts_is_quoted_as_text() -> None:
    """strands-agents answers a call with `{"output": [{"text": "18C, clear"}]}`: the model reads the
    text, so the scripted answer quotes `18C, clear`, not the JSON list."""
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "What's the weather in Paris?"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]},
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "get_weather", "response": {"output": [{"text": "18C, clear"}]}}}
                ],
            },
        ],
        "tools": _body("gemini", scenario="single_call")["tools"],
    }
    exchange = _send("gemini", body, path="/v1beta/models/single_call:generateContent")
    text = json.loads(exchange.body)["candidates"][0]["content"]["parts"][0]["text"]
    assert text == 'The weather in Paris: "18C, clear".'  # not '"[{"text": "18C, clear"}]"'
