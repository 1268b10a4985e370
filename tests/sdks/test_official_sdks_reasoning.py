"""The official SDKs against a reasoning model: their own ways of keeping the whole turn pass, in-process
and over HTTP, and each SDK's own 400 carries the provider's verbatim text when the reasoning is dropped."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

import sandbox
from tests.sdk_drivers import REASONING_DRIVERS, in_process_options, server_options

SCENARIO = "multi_step_reasoning"
ANSWER = "confirmed, ref LB-2041"


CASES = [(driver, stream) for driver in sorted(REASONING_DRIVERS) for stream in (False, True)]
CASES.remove(("gemini-chat", True))  # see sdk_drivers.gemini_chat


@pytest.mark.parametrize(("driver", "stream"), CASES)
def test_sdk_keeps_the_reasoning_turn_in_process(driver: str, stream: bool) -> None:
    transport = sandbox.httpx2_transport()
    answer, turns = REASONING_DRIVERS[driver](SCENARIO, stream=stream, **in_process_options(driver, transport))
    assert ANSWER in answer
    assert [exchange.status for exchange in transport.journal] == [200] * 4
    assert all(turn for turn in turns[:3]), turns  # every call turn carried reasoning, as the SDK saw it
    sent = [json.loads(exchange.request_body) for exchange in transport.journal]
    assert _reasoning_sent_back(driver, sent[-1]) == 3


@pytest.mark.parametrize(("driver", "stream"), CASES)
def test_sdk_keeps_the_reasoning_turn_over_http(driver: str, server: str, stream: bool) -> None:
    answer, _ = REASONING_DRIVERS[driver](SCENARIO, stream=stream, **server_options(driver, server))
    assert ANSWER in answer


def _reasoning_sent_back(driver: str, body: dict[str, Any]) -> int:
    """How many turns of the last request carried their reasoning, in the provider's own form."""
    if driver == "openai-responses":
        return sum(item.get("type") == "reasoning" for item in body["input"])
    if driver == "anthropic":
        return sum(
            isinstance(message["content"], list) and message["content"][0]["type"] == "thinking"
            for message in body["messages"]
            if message["role"] == "assistant"
        )
    return sum(
        "thoughtSignature" in content["parts"][0] or "thought_signature" in content["parts"][0]
        for content in body["contents"]
        if content["role"] == "model"
    )


def test_openai_stream_helper_accumulates_the_reasoning_item() -> None:
    import openai

    scenario = sandbox.get_scenario(SCENARIO)
    tools: Any = [
        {"type": "function", "name": t.name, "parameters": t.parameters, "strict": False} for t in scenario.tools
    ]
    client = openai.OpenAI(
        api_key="sk-test", max_retries=0, http_client=httpx2.Client(transport=sandbox.httpx2_transport())
    )  # type: ignore[arg-type]
    with (
        client,
        client.responses.stream(
            model=SCENARIO, input=scenario.prompt, tools=tools, reasoning={"summary": "auto"}
        ) as events,
    ):
        deltas = [event.delta for event in events if event.type == "response.reasoning_summary_text.delta"]
        response = events.get_final_response()
    reasoning = response.output[0]
    assert reasoning.type == "reasoning" and reasoning.encrypted_content
    assert reasoning.summary[0].text == "".join(deltas) == scenario.steps[0].reasoning


def test_anthropic_stream_helper_accumulates_thinking_and_signature() -> None:
    import anthropic

    scenario = sandbox.get_scenario(SCENARIO)
    tools: Any = [{"name": t.name, "input_schema": t.parameters} for t in scenario.tools]
    client = anthropic.Anthropic(
        api_key="sk-ant", max_retries=0, http_client=httpx2.Client(transport=sandbox.httpx2_transport())
    )  # type: ignore[arg-type]
    with (
        client,
        client.messages.stream(
            model=SCENARIO,
            max_tokens=2048,
            thinking={"type": "enabled", "budget_tokens": 1024},
            messages=[{"role": "user", "content": scenario.prompt}],
            tools=tools,
        ) as events,
    ):
        thinking = "".join(event.thinking for event in events if event.type == "thinking")
        message = events.get_final_message()
    block = message.content[0]
    assert block.type == "thinking" and block.thinking == thinking == scenario.steps[0].reasoning
    assert block.signature and message.content[1].type == "tool_use"


def _drop_reasoning_first_round(driver: str) -> Any:
    """Run the first round with the SDK, send back the calls without their reasoning: the SDK's error."""
    return REASONING_DRIVERS[driver](SCENARIO, drop_reasoning=True)


def test_openai_sdk_raises_its_own_400_when_reasoning_is_dropped() -> None:
    import openai

    with sandbox.mock(), pytest.raises(openai.BadRequestError) as info:
        _drop_reasoning_first_round("openai-responses")
    assert info.value.status_code == 400 and info.value.param == "input" and info.value.code is None
    assert "of type 'function_call' was provided without its required 'reasoning' item: 'rs_" in info.value.message


def test_anthropic_sdk_raises_its_own_400_when_thinking_is_dropped() -> None:
    import anthropic

    with sandbox.mock(), pytest.raises(anthropic.BadRequestError) as info:
        _drop_reasoning_first_round("anthropic")
    assert info.value.status_code == 400
    assert info.value.body["error"]["message"].startswith(  # type: ignore[index]
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When "
        "`thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the "
        "lastmost set of `tool_use` and `tool_result` blocks)."
    )


def test_gemini_sdk_raises_its_own_400_when_the_signature_is_dropped() -> None:
    from google.genai import errors

    with sandbox.mock(), pytest.raises(errors.ClientError) as info:
        _drop_reasoning_first_round("gemini")
    assert info.value.code == 400 and info.value.status == "INVALID_ARGUMENT"
    assert info.value.message is not None and info.value.message.startswith(
        "Function call is missing a thought_signature in functionCall parts."
    )
    assert "function call `default_api:find_restaurant` , position 2." in info.value.message
