"""Histories real clients send that the real providers accept, and so must the sandbox: a parallel turn
split into one assistant message per call, Gemini's runs of adjacent model contents, and function
responses wrapped the ways frameworks wrap them."""

from __future__ import annotations

import json
from typing import Any

import pytest

import sandbox
from sandbox import Rule, skyl
from tests.conftest import scenario_request, scripted_run

GEMINI_PATH = "/v1beta/models/{model}:generateContent"


def test_a_parallel_turn_split_into_one_assistant_message_per_call_is_one_turn(provider: str) -> None:
    """openai-agents' LiteLLM model sends `assistant[call A], tool[A], assistant[call B], tool[B]`."""
    client = skyl.Client(provider, transport=sandbox.transport())
    req = scenario_request("parallel_calls")
    run = scripted_run("parallel_calls")
    first = client.complete(req)
    assert len(first.tool_calls()) == 3
    for index, call in enumerate(first.tool_calls()):
        texts = [skyl.Text(first.text())] if index == 0 and first.text() else []
        req.messages.append(skyl.Message("assistant", [*texts, call]))
        req.messages.append(skyl.tool_result_message(call.id, run(call)))
    answer = client.complete(req)
    assert answer.tool_calls() == []
    assert "18C, clear" in answer.text() and "24C, humid" in answer.text() and "21:30" in answer.text()


def test_a_split_turn_that_drops_a_call_is_still_a_history_mismatch(provider: str) -> None:
    """Only pieces that make up the whole turn count as one: a call left out is reported, as before."""
    client = skyl.Client(provider, transport=sandbox.transport())
    req = scenario_request("parallel_calls")
    run = scripted_run("parallel_calls")
    for call in client.complete(req).tool_calls()[:2]:
        req.messages.append(skyl.Message("assistant", [call]))
        req.messages.append(skyl.tool_result_message(call.id, run(call)))
    with pytest.raises(skyl.ProviderError) as info:
        client.complete(req)
    assert info.value.status == 400
    assert "should be the model turn the sandbox sent at step 0" in info.value.message


def _gemini(engine: sandbox.Engine, model: str, contents: list[dict[str, Any]], tools: list[Any]) -> Any:
    body = {"contents": contents, "tools": [{"functionDeclarations": tools}]}
    exchange = engine.handle("POST", GEMINI_PATH.format(model=model), json.dumps(body).encode())
    return exchange


def _declarations(name: str) -> list[dict[str, Any]]:
    return [
        {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)}
        for tool in sandbox.get_scenario(name).tools
    ]


def test_gemini_takes_a_run_of_model_contents_as_one_turn() -> None:
    """google-genai's streaming automatic function calling appends each streamed chunk as a content."""
    engine = sandbox.Engine()
    prompt = {"role": "user", "parts": [{"text": "What's the weather in Paris?"}]}
    contents = [
        prompt,
        {"role": "model", "parts": [{"text": "Let me check "}]},
        {"role": "model", "parts": [{"text": "the weather in Paris."}]},
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"result": "18C"}}}]},
    ]
    exchange = _gemini(engine, "single_call", contents, _declarations("single_call"))
    assert exchange.status == 200, exchange.body
    text = json.loads(exchange.body)["candidates"][0]["content"]["parts"][0]["text"]
    assert text == 'The weather in Paris: "18C".'


def test_gemini_still_wants_the_responses_right_after_the_calls() -> None:
    engine = sandbox.Engine()
    call = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
    contents = [
        {"role": "user", "parts": [{"text": "Weather?"}]},
        {"role": "model", "parts": [call]},
        {"role": "model", "parts": [{"text": "Checking."}]},
        {"role": "model", "parts": [call]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"result": "18C"}}}]},
    ]
    exchange = _gemini(engine, "single_call", contents, _declarations("single_call"))
    assert exchange.status == 400 and exchange.error is not None
    assert exchange.error.rule is Rule.MISSING_RESULT
    assert "number of function response parts is equal to the number of function call parts" in exchange.error.message


@pytest.mark.parametrize(
    ("response", "who"),
    [
        ({"return_value": "18C, clear"}, "pydantic-ai"),
        ({"content": "18C, clear"}, "litellm"),
        ({"name": "get_weather", "content": "18C, clear"}, "the Vercel AI SDK"),
        ({"result": "18C, clear"}, "google-genai"),
    ],
)
def test_gemini_function_responses_are_unwrapped_however_the_client_wraps_them(
    response: dict[str, Any], who: str
) -> None:
    engine = sandbox.Engine()
    contents = [
        {"role": "user", "parts": [{"text": "What's the weather in Paris?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Let me check the weather in Paris."},
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
            ],
        },
        {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": response}}]},
    ]
    exchange = _gemini(engine, "single_call", contents, _declarations("single_call"))
    assert exchange.status == 200, who
    text = json.loads(exchange.body)["candidates"][0]["content"]["parts"][0]["text"]
    assert text == 'The weather in Paris: "18C, clear".', who


@pytest.mark.parametrize("wrapper", ["error", "return_value", "content"])
def test_gemini_wrapped_errors_count_as_unusable_and_results_as_usable(wrapper: str) -> None:
    """tool_error_recovery asks again while the result is unusable: the judgement reads the unwrapped value."""
    engine = sandbox.Engine()

    def call(city: str) -> dict[str, Any]:
        return {"functionCall": {"name": "get_weather", "args": {"city": city}}}

    def answer(value: str) -> dict[str, Any]:
        return {"functionResponse": {"name": "get_weather", "response": {wrapper: value}}}

    contents = [
        {"role": "user", "parts": [{"text": "What's the weather in Paris?"}]},
        {"role": "model", "parts": [call("Pariss")]},
        {"role": "user", "parts": [answer("ERROR: unknown city 'Pariss'")]},
        {"role": "model", "parts": [{"text": "That city name was wrong; trying again."}, call("Paris")]},
        {"role": "user", "parts": [answer("")]},
    ]
    exchange = _gemini(engine, "tool_error_recovery", contents, _declarations("tool_error_recovery"))
    assert exchange.status == 200
    parts = json.loads(exchange.body)["candidates"][0]["content"]["parts"]
    assert any("functionCall" in part for part in parts), "an empty result is unusable: the model asks again"


def test_gemini_sandbox_errors_name_no_ids_that_never_were_on_the_wire() -> None:
    """Gemini calls carry no ids; the sandbox's own placeholders must not leak into what a learner reads."""
    engine = sandbox.Engine(echo="strict")
    contents = [
        {"role": "user", "parts": [{"text": "What's the weather in Paris?"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Lyon"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {"result": "9C"}}}]},
    ]
    exchange = _gemini(engine, "single_call", contents, _declarations("single_call"))
    assert exchange.status == 400 and exchange.error is not None
    assert exchange.error.rule is Rule.HISTORY_MISMATCH
    assert "get_weather(city='Paris')" in exchange.error.message
    assert "gemini:" not in exchange.error.message and "gemini-call-" not in exchange.error.message
    assert "[id " not in exchange.error.message
