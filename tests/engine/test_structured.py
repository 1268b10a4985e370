"""Structured output: a step's `output` answers a request that asks for JSON by a schema, on every
wire format, read back by each official SDK's own parsing helper; an output that does not fit the
request's schema is the sandbox's 400, naming the field."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import openai
import pytest
from google import genai
from google.genai import errors, types
from pydantic import BaseModel

import sandbox
from sandbox import Scenario, Step

ORDER = {"order_id": "ord_1042", "status": "shipped", "items": ["tea", "cups"]}


class Order(BaseModel):
    order_id: str
    status: str
    items: list[str]


def transport(output: Any = ORDER, **options: Any) -> sandbox.Httpx2Transport:
    return sandbox.httpx2_transport(Scenario("orders", steps=[Step(output=output)]), **options)


def _openai(sandboxed: sandbox.Httpx2Transport) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", max_retries=0, http_client=httpx2.Client(transport=sandboxed))


def _anthropic(sandboxed: sandbox.Httpx2Transport) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-ant-test", max_retries=0, http_client=httpx2.Client(transport=sandboxed))


def _gemini(sandboxed: sandbox.Httpx2Transport) -> genai.Client:
    options = types.HttpOptions(httpx_client=httpx2.Client(transport=sandboxed))
    return genai.Client(api_key="gemini-test", http_options=options)


def chat(sandboxed: sandbox.Httpx2Transport) -> Any:
    client = _openai(sandboxed)
    messages: Any = [{"role": "user", "content": "ord_1042?"}]
    return (
        client.chat.completions.parse(model="gpt-4o", messages=messages, response_format=Order)
        .choices[0]
        .message.parsed
    )


def responses(sandboxed: sandbox.Httpx2Transport) -> Any:
    return _openai(sandboxed).responses.parse(model="gpt-4o", input="ord_1042?", text_format=Order).output_parsed


def responses_stream(sandboxed: sandbox.Httpx2Transport) -> Any:
    with _openai(sandboxed).responses.stream(model="gpt-4o", input="ord_1042?", text_format=Order) as events:
        for _ in events:
            pass
        return events.get_final_response().output_parsed


def anthropic_output_format(sandboxed: sandbox.Httpx2Transport) -> Any:
    messages: Any = [{"role": "user", "content": "ord_1042?"}]
    client = _anthropic(sandboxed)
    return client.messages.parse(model="claude", max_tokens=256, messages=messages, output_format=Order).parsed_output


def anthropic_tool_as_schema(sandboxed: sandbox.Httpx2Transport) -> Any:
    tools: Any = [{"name": "record_order", "input_schema": Order.model_json_schema()}]
    message = _anthropic(sandboxed).messages.create(
        model="claude",
        max_tokens=256,
        messages=[{"role": "user", "content": "ord_1042?"}],
        tools=tools,
        tool_choice={"type": "tool", "name": "record_order"},
    )
    assert message.stop_reason == "tool_use"
    (block,) = message.content
    assert block.type == "tool_use" and block.name == "record_order"
    return Order.model_validate(block.input)


def gemini_response_schema(sandboxed: sandbox.Httpx2Transport) -> Any:
    config = types.GenerateContentConfig(response_mime_type="application/json", response_schema=Order)
    return (
        _gemini(sandboxed).models.generate_content(model="gemini-2.5-flash", contents="ord_1042?", config=config).parsed
    )


def gemini_response_json_schema(sandboxed: sandbox.Httpx2Transport) -> Any:
    config = types.GenerateContentConfig(
        response_mime_type="application/json", response_json_schema=Order.model_json_schema()
    )
    reply = _gemini(sandboxed).models.generate_content(model="gemini-2.5-flash", contents="ord_1042?", config=config)
    return Order.model_validate_json(reply.text or "")


WAYS = {
    "chat": (chat, openai.BadRequestError, "response_format.json_schema.schema"),
    "responses": (responses, openai.BadRequestError, "text.format.schema"),
    "responses-stream": (responses_stream, openai.BadRequestError, "text.format.schema"),
    "anthropic-output-format": (anthropic_output_format, anthropic.BadRequestError, "output_config.format.schema"),
    "anthropic-tool-as-schema": (anthropic_tool_as_schema, anthropic.BadRequestError, "tools[0].input_schema"),
    "gemini-response-schema": (gemini_response_schema, errors.ClientError, "generationConfig.responseSchema"),
    "gemini-response-json-schema": (
        gemini_response_json_schema,
        errors.ClientError,
        "generationConfig.responseJsonSchema",
    ),
}


@pytest.mark.parametrize("way", WAYS)
def test_a_scripted_structured_answer_reaches_the_sdk_parsed(way: str) -> None:
    ask, _, _ = WAYS[way]
    assert ask(transport()) == Order(**ORDER)


@pytest.mark.parametrize("way", WAYS)
def test_an_answer_that_does_not_fit_the_schema_has_clear_error(way: str) -> None:
    ask, error, where = WAYS[way]
    sandboxed = transport({"order_id": "ord_1042", "status": "shipped", "items": ["tea", 7]})
    with pytest.raises(error, match=r"sandbox: the structured answer of scenario 'orders'"):
        ask(sandboxed)
    refusal = sandboxed.journal.last.error
    assert refusal is not None and refusal.rule is sandbox.Rule.SCHEMA_MISMATCH
    assert f"the schema the request sends in {where}: output.items[1]: 7 is not of type string" in refusal.message


def test_a_tool_as_schema_answer_goes_back_as_a_tool_use() -> None:
    """The loop may go on after the forced tool: its `tool_use` comes back, with its result, and the
    replay recognises it as the turn it sent."""
    sandboxed = sandbox.httpx2_transport(Scenario("orders", steps=[Step(output=ORDER), Step(text="Saved.")]))
    client = _anthropic(sandboxed)
    tools: Any = [{"name": "record_order", "input_schema": Order.model_json_schema()}]
    messages: list[Any] = [{"role": "user", "content": "ord_1042?"}]
    first = client.messages.create(
        model="claude",
        max_tokens=256,
        messages=messages,
        tools=tools,
        tool_choice={"type": "tool", "name": "record_order"},
    )
    messages += [
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first.content[0].id, "content": "saved"}]},  # type: ignore[union-attr]
    ]
    second = client.messages.create(model="claude", max_tokens=256, messages=messages, tools=tools)
    assert second.content[0].text == "Saved."  # type: ignore[union-attr]


def test_a_request_without_a_schema_gets_the_json_text() -> None:
    message = _openai(transport()).chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "ord_1042?"}]
    )
    assert message.choices[0].message.content == '{"order_id":"ord_1042","status":"shipped","items":["tea","cups"]}'


def test_output_in_toml_and_its_clear_error() -> None:
    scenario = Scenario.from_dict({"name": "orders", "steps": [{"output": {"order_id": "ord_1042"}}]})
    assert scenario.steps[0].output == {"order_id": "ord_1042"}
    with pytest.raises(sandbox.ScenarioError, match=r"Step\(output=...\) is a structured answer on its own"):
        Step(output={"a": 1}, text="Here it is")
