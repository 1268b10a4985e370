"""The journal's helpers, read after an official SDK's tool loop: calls, assert_called, transcript."""

from __future__ import annotations

import httpx2
import openai
import pytest

import sandbox
from tests.sdk_drivers import in_process_options, openai_chat


def test_calls_and_assert_called_name_what_reached_the_client() -> None:
    door = sandbox.httpx2_transport("multi_step")
    openai_chat("multi_step", **in_process_options("openai", door))
    calls = door.journal.calls()
    assert [call.name for call in calls] == [
        call.name for step in sandbox.get_scenario("multi_step").steps for call in step.calls
    ]
    first = calls[0]
    assert door.journal.assert_called(first.name, **first.arguments) is first
    assert door.journal.calls("no_such_tool") == []


def test_assert_called_has_clear_error() -> None:
    door = sandbox.httpx2_transport("single_call")
    openai_chat("single_call", **in_process_options("openai", door))
    with pytest.raises(
        AssertionError,
        match=r'(?s)No call get_weather\(city="Rome"\) reached the client\..*- get_weather\(city="Paris"\)',
    ):
        door.journal.assert_called("get_weather", city="Rome")


def test_transcript_is_the_same_text_for_the_same_loop() -> None:
    texts = []
    for _ in range(2):
        door = sandbox.httpx2_transport("single_call")
        openai_chat("single_call", **in_process_options("openai", door))
        texts.append(door.journal.transcript())
    assert texts[0] == texts[1]
    assert texts[0].splitlines()[0] == "#1 POST /v1/chat/completions -> 200 [single_call step 0]"
    assert '  model calls get_weather(city="Paris")' in texts[0]
    assert "call_" not in texts[0]  # no ids: a snapshot holds across changes of id scheme


def test_transcript_names_a_refusal() -> None:
    door = sandbox.httpx2_transport("single_call", echo="strict")
    client = openai.OpenAI(api_key="sk-test", max_retries=0, http_client=httpx2.Client(transport=door))  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="single_call", messages=[{"role": "user", "content": "hi"}])
    lines = door.journal.transcript().splitlines()
    assert lines[0] == "#1 POST /v1/chat/completions -> 400"
    assert lines[1] == '  user: "hi"'
    assert lines[2].startswith("  error: missing_tool: ")
