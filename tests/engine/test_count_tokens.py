"""Anthropic's `POST /v1/messages/count_tokens`, through the official SDK's `messages.count_tokens()`."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import pytest

import sandbox

WEATHER: Any = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]


def _client() -> tuple[anthropic.Anthropic, sandbox.Httpx2Transport]:
    transport = sandbox.httpx2_transport()
    return anthropic.Anthropic(
        api_key="sk-test", http_client=httpx2.Client(transport=transport), max_retries=0
    ), transport


def test_count_tokens_answers_one_token_per_four_bytes_of_the_body() -> None:
    client, transport = _client()
    messages: Any = [{"role": "user", "content": "What's the weather in Paris?"}]
    counted = client.messages.count_tokens(model="single_call", messages=messages, tools=WEATHER)
    assert counted.input_tokens == len(transport.journal[-1].request_body) // 4
    again = client.messages.count_tokens(model="single_call", messages=messages, tools=WEATHER)
    assert again.input_tokens == counted.input_tokens


def test_count_tokens_checks_the_messages_as_a_messages_request_does() -> None:
    client, _ = _client()
    messages: Any = [
        {"role": "user", "content": "Weather?"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "18C"}]},
    ]
    with pytest.raises(anthropic.BadRequestError, match="unexpected `tool_use_id` found in `tool_result` blocks"):
        client.messages.count_tokens(model="single_call", messages=messages, tools=WEATHER)


def test_count_tokens_refuses_the_fields_only_a_message_takes() -> None:
    client, _ = _client()
    with pytest.raises(anthropic.BadRequestError, match="max_tokens: Extra inputs are not permitted"):
        client.messages.count_tokens(
            model="single_call",
            messages=[{"role": "user", "content": "Hi"}],
            extra_body={"max_tokens": 100},
        )


def test_count_tokens_for_an_unknown_model_is_the_providers_404() -> None:
    client, _ = _client()
    with pytest.raises(anthropic.NotFoundError, match="model: nope"):
        client.messages.count_tokens(model="nope", messages=[{"role": "user", "content": "Hi"}])
