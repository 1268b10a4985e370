"""Gemini as the real API answers it over HTTP: `alt=` picks SSE or a JSON array (and nothing else),
and bytes that are not UTF-8 are a 400, as on the other three formats."""

from __future__ import annotations

import json

import httpx
import pytest

import sandbox

PATH = "/v1beta/models/plain_text:streamGenerateContent"
BODY = json.dumps({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}).encode()
TEXT = "Hello! No tools needed for that."


def test_alt_sse_streams_server_sent_events() -> None:
    exchange = sandbox.Engine().handle("POST", PATH, BODY, query="alt=sse")
    assert exchange.status == 200 and exchange.is_stream
    assert exchange.body.startswith(b"data: {")


def test_no_alt_streams_a_json_array_as_the_real_api_does() -> None:
    for query in ("", "alt=json"):
        exchange = sandbox.Engine().handle("POST", PATH, BODY, query=query)
        assert exchange.status == 200 and exchange.headers["content-type"] == "application/json"
        chunks = json.loads(exchange.body)
        assert "".join(part["text"] for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"]) == TEXT


def test_an_unknown_alt_is_refused() -> None:
    exchange = sandbox.Engine().handle("POST", PATH, BODY, query="alt=xml")
    assert exchange.status == 400
    assert "alt='xml' is not a response format" in json.loads(exchange.body)["error"]["message"]


def test_the_transport_passes_the_query_on() -> None:
    with httpx.Client(transport=sandbox.transport(), base_url="https://generativelanguage.googleapis.com") as http:
        assert http.post(PATH, content=BODY).headers["content-type"] == "application/json"
        assert (
            http.post(PATH, params={"alt": "sse"}, content=BODY).headers["content-type"].startswith("text/event-stream")
        )


def test_invalid_utf8_is_a_400_not_silently_replaced() -> None:
    body = b'{"contents": [{"role": "user", "parts": [{"text": "hi \xff"}]}]}'
    exchange = sandbox.Engine().handle("POST", "/v1beta/models/plain_text:generateContent", body)
    assert exchange.status == 400
    message = json.loads(exchange.body)["error"]["message"]
    assert message.startswith("Invalid JSON payload received. Encountered non UTF-8 code points.")


@pytest.mark.parametrize(
    ("temperature", "says"),
    [
        ("1" * 4500, "Invalid value at 'generation_config.temperature' (TYPE_FLOAT), inf"),
        ("1" * 400, "Invalid value at 'generation_config.temperature' (TYPE_FLOAT), 1111"),
        ("1e39", "Invalid value at 'generation_config.temperature' (TYPE_FLOAT), 9999999999"),
        ('"warm"', "Invalid value at 'generation_config.temperature' (TYPE_FLOAT), \"warm\""),
        ("true", "Invalid value at 'generation_config.temperature' (TYPE_FLOAT), true"),
        ("3", "has a temperature value of 3 but the supported range is from 0 (inclusive) to 2.0001"),
        ("-1.5", "has a temperature value of -1.5 but the supported range is from 0 (inclusive)"),
    ],
    ids=["4500-digits", "400-digits", "past-float", "string", "bool", "above-2", "negative"],
)
def test_gemini_temperature_out_of_range_is_refused(temperature: str, says: str) -> None:
    body = f'{{"contents": [{{"parts": [{{"text": "hi"}}]}}], "generationConfig": {{"temperature": {temperature}}}}}'
    exchange = sandbox.Engine().handle("POST", "/v1beta/models/plain_text:generateContent", body.encode())
    assert exchange.status == 400
    error = json.loads(exchange.body)["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    assert says in error["message"]


@pytest.mark.parametrize("temperature", ["0", "0.7", "2", '"1.5"'])
def test_gemini_temperature_in_range_is_answered(temperature: str) -> None:
    body = f'{{"contents": [{{"parts": [{{"text": "hi"}}]}}], "generationConfig": {{"temperature": {temperature}}}}}'
    exchange = sandbox.Engine().handle("POST", "/v1beta/models/plain_text:generateContent", body.encode())
    assert exchange.status == 200, exchange.body
