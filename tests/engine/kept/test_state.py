"""State the real providers keep for their clients, kept by the sandbox too: Anthropic message threads
and OpenAI Responses `previous_response_id`, bounded, and reachable only through ids it issued."""

from __future__ import annotations

import json
from typing import Any

import pytest

import sandbox
from sandbox.engine.kept import KeptState
from tests.frameworks._tools import scenario_functions

pytestmark = pytest.mark.usefixtures("kept_store")  # each test once per backend (tests/stores.py)

WEATHER = {"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
PROMPT = [{"role": "user", "content": "What's the weather in Paris?"}]


def _anthropic(transport: sandbox.Httpx2Transport) -> Any:
    import anthropic
    import httpx2

    return anthropic.Anthropic(api_key="sk-ant", max_retries=0, http_client=httpx2.Client(transport=transport))  # type: ignore[arg-type]


def _openai(transport: sandbox.Httpx2Transport) -> Any:
    import httpx2
    import openai

    return openai.OpenAI(api_key="sk-test", max_retries=0, http_client=httpx2.Client(transport=transport))  # type: ignore[arg-type]


def _result_for(message: Any, text: str = "18C, clear") -> list[dict[str, Any]]:
    call = next(block for block in message.content if block.type == "tool_use")
    return [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": text}]}]


def test_a_thread_continues_with_only_the_new_messages_and_no_tools() -> None:
    transport = sandbox.httpx2_transport()
    with _anthropic(transport) as client:
        first = client.beta.messages.create(
            model="single_call", max_tokens=64, tools=[WEATHER], messages=PROMPT, thread={"type": "create"}
        )
        second = client.beta.messages.create(
            model="single_call",
            max_tokens=64,
            messages=_result_for(first),
            thread={"type": "continue", "previous_message_id": first.id},
        )
    assert second.content[0].text == 'The weather in Paris: "18C, clear".'
    assert [exchange.status for exchange in transport.journal] == [200, 200]


def test_a_thread_the_sandbox_never_issued_is_not_found_with_the_sdk_error_code() -> None:
    import anthropic

    with _anthropic(sandbox.httpx2_transport()) as client, pytest.raises(anthropic.NotFoundError) as info:
        client.beta.messages.create(
            model="single_call",
            max_tokens=64,
            messages=PROMPT,
            thread={"type": "continue", "previous_message_id": "msg_01XFDUDYJgAACzvnptvVoYEL"},
        )
    assert info.value.error_code == "thread_not_found"
    message = info.value.body["error"]["message"]  # type: ignore[index]
    assert message.startswith("No usable Thread state was found for previous_message_id 'msg_01XFDUDYJgAACzvnptvVoYEL'")


@pytest.mark.memory_store
def test_one_conversation_cannot_continue_another_sandboxs_thread() -> None:
    """State lives in one engine and is found only by the ids that engine issued."""
    import anthropic

    with _anthropic(sandbox.httpx2_transport()) as client:
        first = client.beta.messages.create(
            model="single_call", max_tokens=64, tools=[WEATHER], messages=PROMPT, thread={"type": "create"}
        )
    with _anthropic(sandbox.httpx2_transport()) as other, pytest.raises(anthropic.NotFoundError) as info:
        other.beta.messages.create(
            model="single_call",
            max_tokens=64,
            messages=_result_for(first),
            thread={"type": "continue", "previous_message_id": first.id},
        )
    assert info.value.error_code == "thread_not_found"


def test_two_conversations_at_the_same_step_get_different_response_ids() -> None:
    transport = sandbox.httpx2_transport()
    with _anthropic(transport) as client:
        ids = {
            client.beta.messages.create(
                model="single_call",
                max_tokens=64,
                tools=[WEATHER],
                messages=[{"role": "user", "content": prompt}],
                thread={"type": "create"},
            ).id
            for prompt in ("Weather in Paris?", "And what's the weather in Paris?")
        }
    assert len(ids) == 2


def test_a_response_can_be_continued_only_once() -> None:
    import anthropic

    with _anthropic(sandbox.httpx2_transport()) as client:
        first = client.beta.messages.create(
            model="single_call", max_tokens=64, tools=[WEATHER], messages=PROMPT, thread={"type": "create"}
        )
        thread = {"type": "continue", "previous_message_id": first.id}
        client.beta.messages.create(model="single_call", max_tokens=64, messages=_result_for(first), thread=thread)
        with pytest.raises(anthropic.BadRequestError) as info:
            client.beta.messages.create(model="single_call", max_tokens=64, messages=_result_for(first), thread=thread)
    assert info.value.error_code == "thread_already_continued"


def test_a_continuation_that_changes_the_threads_tools_is_refused() -> None:
    import anthropic

    with _anthropic(sandbox.httpx2_transport()) as client:
        first = client.beta.messages.create(
            model="single_call", max_tokens=64, tools=[WEATHER], messages=PROMPT, thread={"type": "create"}
        )
        with pytest.raises(anthropic.BadRequestError) as info:
            client.beta.messages.create(
                model="single_call",
                max_tokens=64,
                tools=[{**WEATHER, "description": "changed"}],
                messages=_result_for(first),
                thread={"type": "continue", "previous_message_id": first.id},
            )
    assert info.value.error_code == "thread_fingerprint_mismatch"


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_the_tool_runner_replays_the_history_when_the_sandbox_forgot_its_thread(stream: bool) -> None:
    """With no room for threads, every continuation finds its thread gone: the SDK's own recovery
    (`thread_not_found` -> the whole history under a new thread) still finishes the task."""
    from anthropic import beta_tool

    transport = sandbox.httpx2_transport()
    transport.engine.kept = KeptState(max_entries=0)
    scenario = sandbox.get_scenario("multi_step")
    with _anthropic(transport) as client:
        runner = client.beta.messages.tool_runner(
            model="multi_step",
            max_tokens=256,
            tools=[beta_tool(function) for function in scenario_functions("multi_step")],
            messages=[{"role": "user", "content": scenario.prompt}],
            stream=stream,
        )
        final = runner.until_done()
    assert "confirmed, ref LB-2041" in final.content[-1].text
    statuses = [exchange.status for exchange in transport.journal]
    assert 404 in statuses and statuses[-1] == 200


def _response_input(response: Any, output: str = "18C, clear") -> list[dict[str, Any]]:
    call = next(item for item in response.output if item.type == "function_call")
    return [{"type": "function_call_output", "call_id": call.call_id, "output": output}]


def test_previous_response_id_continues_a_stored_response() -> None:
    transport = sandbox.httpx2_transport()
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": False}]
    with _openai(transport) as client:
        first = client.responses.create(model="single_call", input="What's the weather in Paris?", tools=tools)
        second = client.responses.create(
            model="single_call", previous_response_id=first.id, input=_response_input(first), tools=tools
        )
    assert second.output_text == 'The weather in Paris: "18C, clear".'
    assert second.previous_response_id == first.id
    assert json.loads(transport.journal[1].request_body)["input"][0]["type"] == "function_call_output"


def test_store_false_keeps_nothing_as_the_real_api_does() -> None:
    import openai

    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": False}]
    with _openai(sandbox.httpx2_transport()) as client:
        first = client.responses.create(model="single_call", input="Weather?", tools=tools, store=False)
        with pytest.raises(openai.BadRequestError) as info:
            client.responses.create(
                model="single_call", previous_response_id=first.id, input=_response_input(first), tools=tools
            )
    message = info.value.body["message"]  # type: ignore[index]
    assert message.startswith(f"Previous response with id '{first.id}' not found.\n\nsandbox: ")
    assert "`store: false`" in message
    assert info.value.code == "previous_response_not_found"


def test_kept_state_is_bounded_in_entries_and_bytes() -> None:
    kept = KeptState(max_entries=3, max_bytes=10_000)
    engine = sandbox.Engine()
    engine.kept = kept
    for index in range(10):
        body = {"model": "plain_text", "input": f"Hello {index} " + "x" * 1500}
        assert engine.handle("POST", "/v1/responses", json.dumps(body).encode()).status == 200
    assert len(kept) == 3
    big = {"model": "plain_text", "input": "y" * 20_000}
    assert engine.handle("POST", "/v1/responses", json.dumps(big).encode()).status == 200
    assert len(kept) == 3, "an entry larger than the store is kept nowhere"
    for index in range(6):
        body = {"model": "plain_text", "input": "z" * 4000 + str(index)}
        engine.handle("POST", "/v1/responses", json.dumps(body).encode())
    assert len(kept) == 2, "the byte bound evicts before the count bound does"
