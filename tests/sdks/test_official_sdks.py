"""The official SDKs, unmodified, against every door: in-process (httpx2), mock() and a real server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

import sandbox
from tests.sdk_drivers import DRIVERS, in_process_options, server_options


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
@pytest.mark.parametrize("scenario", ["single_call", "parallel_calls"])
def test_sdk_round_trip_in_process(provider: str, scenario: str, stream: bool) -> None:
    transport = sandbox.httpx2_transport()
    answer = DRIVERS[provider](scenario, stream=stream, **in_process_options(provider, transport))
    assert "18C, clear" in answer
    assert all(exchange.status == 200 for exchange in transport.journal)
    assert len(transport.journal) == 2


@pytest.mark.usefixtures("kept_store")  # mock() keeps state where the test's store is (tests/stores.py)
@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_sdk_round_trip_through_mock_on_the_real_hosts(provider: str, stream: bool) -> None:
    with sandbox.mock() as mounted:
        answer = DRIVERS[provider]("parallel_calls", stream=stream)
    assert "24C, humid" in answer and "21:30" in answer
    assert [exchange.status for exchange in mounted.journal] == [200, 200]


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_sdk_round_trip_over_http(provider: str, server: str, stream: bool) -> None:
    answer = DRIVERS[provider]("multi_step", stream=stream, **server_options(provider, server))
    assert "confirmed, ref LB-2041" in answer


def test_mock_works_as_a_decorator_and_unmounts_after() -> None:
    import openai

    @sandbox.mock("plain_text")
    def ask() -> str:
        client = openai.OpenAI(api_key="sk-test", max_retries=0)
        reply = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hi"}])
        return reply.choices[0].message.content or ""

    assert ask() == "Hello! No tools needed for that."
    client = openai.OpenAI(api_key="sk-test", max_retries=0, base_url="http://127.0.0.1:9/v1", timeout=2)
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hi"}])


def test_mock_serves_async_sdk_clients() -> None:
    import anthropic
    import openai

    async def main() -> tuple[str, str]:
        oa = openai.AsyncOpenAI(api_key="sk-test", max_retries=0)
        chat = await oa.chat.completions.create(model="plain_text", messages=[{"role": "user", "content": "Hi"}])
        an = anthropic.AsyncAnthropic(api_key="sk-ant", max_retries=0)
        message = await an.messages.create(
            model="plain_text", max_tokens=64, messages=[{"role": "user", "content": "Hi"}]
        )
        return chat.choices[0].message.content or "", message.content[0].text  # type: ignore[union-attr]

    with sandbox.mock():
        assert asyncio.run(main()) == ("Hello! No tools needed for that.",) * 2


def test_openai_sdk_raises_its_own_400_with_the_verbatim_text(server: str) -> None:
    import openai

    client = openai.OpenAI(api_key="sk-test", max_retries=0, base_url=f"{server}/v1")
    with client, pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(
            model="single_call",
            messages=[
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": "Let me check the weather in Paris."},
                {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
            ],
            tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
        )
    assert info.value.status_code == 400
    assert info.value.message == (
        "Error code: 400 - Invalid parameter: messages with role 'tool' must be a response to a "
        "preceeding message with 'tool_calls'."
    )
    assert info.value.param == "messages.[2].role"
    assert info.value.type == "invalid_request_error"


def test_anthropic_sdk_raises_its_own_400_with_the_verbatim_text() -> None:
    import anthropic

    with sandbox.mock():
        client = anthropic.Anthropic(api_key="sk-ant", max_retries=0)
        with pytest.raises(anthropic.BadRequestError) as info:
            client.messages.create(
                model="parallel_calls",
                max_tokens=64,
                tools=[
                    {"name": "get_weather", "input_schema": {"type": "object"}},
                    {"name": "get_time", "input_schema": {"type": "object"}},
                ],
                messages=[
                    {"role": "user", "content": "Weather?"},
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {}}],
                    },
                    {"role": "user", "content": "never mind"},
                ],
            )
    assert info.value.status_code == 400
    assert info.value.body["error"]["message"] == (  # type: ignore[index]
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    )


def test_gemini_sdk_raises_its_own_400_with_the_verbatim_text() -> None:
    from google import genai
    from google.genai import errors, types

    with sandbox.mock():
        client = genai.Client(api_key="test-key")
        with pytest.raises(errors.ClientError) as info:
            client.models.generate_content(
                model="single_call",
                contents=[
                    types.Content(role="user", parts=[types.Part(text="Weather?")]),
                    types.Content(
                        role="user",
                        parts=[types.Part.from_function_response(name="get_weather", response={"result": "18C"})],
                    ),
                ],
                config=types.GenerateContentConfig(
                    tools=[types.Tool(function_declarations=[types.FunctionDeclaration(name="get_weather")])]
                ),
            )
    assert info.value.code == 400
    assert info.value.message == (
        "Please ensure that function response turn comes immediately after a function call turn."
    )


@pytest.mark.slow
def test_every_answer_carries_a_request_id_the_sdks_expose_unique_per_request() -> None:
    """`_request_id` on success and `request_id` on errors, from `x-request-id` (OpenAI) and `request-id`
    (Anthropic): unique to each answer, and the same for the same requests sent to a fresh sandbox."""
    import anthropic
    import openai

    def ask_openai(prompt: str) -> str | None:
        client = openai.OpenAI(api_key="sk-test", max_retries=0)
        with client:
            chat = client.chat.completions.create(model="plain_text", messages=[{"role": "user", "content": prompt}])
            response = client.responses.create(model="plain_text", input=prompt)
        assert chat._request_id is not None and response._request_id is not None
        assert chat._request_id != response._request_id
        return chat._request_id

    def ask_anthropic(prompt: str) -> str | None:
        client = anthropic.Anthropic(api_key="sk-ant", max_retries=0)
        with client:
            message = client.messages.create(
                model="plain_text", max_tokens=64, messages=[{"role": "user", "content": prompt}]
            )
            with pytest.raises(anthropic.NotFoundError) as info:
                client.messages.create(
                    model="no_such_scenario", max_tokens=64, messages=[{"role": "user", "content": prompt}]
                )
        assert info.value.request_id is not None and info.value.request_id != message._request_id
        assert info.value.body["request_id"] == info.value.request_id  # type: ignore[index]
        return message._request_id

    def fresh(ask: Callable[[str], str | None], prompt: str) -> str | None:
        with sandbox.mock():
            return ask(prompt)

    with sandbox.mock():
        openai_ids = [ask_openai("Hi"), ask_openai("Hi")]
    with sandbox.mock():
        anthropic_ids = [ask_anthropic("Hi"), ask_anthropic("Hi")]
    openai_ids += [fresh(ask_openai, "Hi"), fresh(ask_openai, "Hello")]
    anthropic_ids += [fresh(ask_anthropic, "Hi"), fresh(ask_anthropic, "Hello")]
    for first, again, first_anew, other in (openai_ids, anthropic_ids):
        assert first != again, "two senders of one request: each answer its own id"
        assert first == first_anew, "a fresh sandbox numbers its answers alike: the same id"
        assert other not in (first, again)
    assert all(rid is not None and rid.startswith("req_") for rid in openai_ids + anthropic_ids)
