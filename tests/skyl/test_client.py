"""The learner-facing client: the lesson's API, with errors that say what to do."""

from __future__ import annotations

import httpx
import pytest

import sandbox
from sandbox import skyl
from tests.conftest import scenario_request


def test_public_names_are_exported_in_one_place() -> None:
    for module in (sandbox, skyl):
        assert sorted(module.__all__) == sorted(set(module.__all__))
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.__all__ names missing {name}"
    assert {"Request", "Response", "Message", "ToolCall", "StopReason", "collect_stream"} <= set(skyl.__all__)
    assert {"transport", "httpx2_transport", "mock", "Scenario", "Engine"} <= set(sandbox.__all__)


def test_reprs_read_like_the_call_that_makes_them() -> None:
    call = skyl.ToolCall("call_1", "get_weather", {"city": "Paris"})
    assert repr(call) == "ToolCall(id='call_1', name='get_weather', arguments={'city': 'Paris'})"
    assert repr(skyl.StopReason.TOOL_USE) == "StopReason.TOOL_USE"
    assert repr(skyl.Text("hi")) == "Text(text='hi')"


def test_message_accepts_a_plain_string_as_text() -> None:
    assert skyl.Message("user", "hello") == skyl.user_text("hello")


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: skyl.Message("bot", "hi"), "role='bot'; use one of 'system', 'user', 'assistant', 'tool'"),
        (lambda: skyl.Message("user", [{"type": "text"}]), "Message content holds parts"),
        (lambda: skyl.tool_result_message("call_1", {"temp": 18}), "content must be a string.*json.dumps"),
        (lambda: skyl.tool_result_message(None, "x"), "call_id must be the call's id string"),
        (lambda: skyl.ToolCall("c", "f", '{"a": 1}'), "arguments must be a dict.*json.loads"),
        (lambda: skyl.Request(model="", messages=[]), "name the model"),
        (lambda: skyl.Request("m", [{"role": "user", "content": "hi"}]), r"req.messages\[0\] is a dict"),
        (lambda: skyl.Request("m", [], tools=[{"name": "f"}]), "tools must be skyl.Tool objects"),
        (lambda: skyl.Client("openai-chat"), "Unknown provider='openai-chat'. Use one of: 'openai'"),
    ],
)
def test_bad_input_has_clear_error(build: object, message: str) -> None:
    with pytest.raises(skyl.UsageError, match=message):
        build()  # type: ignore[operator]


def test_request_keeps_the_list_the_loop_appends_to() -> None:
    messages = [skyl.user_text("hi")]
    req = skyl.Request("single_call", messages)
    assert req.messages is messages
    assert skyl.Request("m", (skyl.user_text("hi"),)).messages == [skyl.user_text("hi")]


def test_appending_something_that_is_not_a_message_fails_before_sending() -> None:
    transport = sandbox.transport()
    client = skyl.Client("openai", transport=transport)
    req = scenario_request("single_call")
    req.messages.append(client.complete(req).message.text())  # type: ignore[arg-type]
    with pytest.raises(skyl.UsageError, match=r"req.messages\[1\] is a str"):
        client.complete(req)
    assert len(transport.journal) == 1, "nothing malformed reached the provider"


def test_complete_takes_a_request() -> None:
    with pytest.raises(skyl.UsageError, match="take a skyl.Request, got dict"):
        skyl.Client("openai", transport=sandbox.transport()).complete({"model": "x"})  # type: ignore[arg-type]


def test_unreachable_server_says_what_to_check() -> None:
    client = skyl.Client("openai", base_url="http://127.0.0.1:9/v1", timeout=2)
    with pytest.raises(skyl.ProviderError, match="Could not reach http://127.0.0.1:9/v1.*sandbox serve") as info:
        client.complete(scenario_request("plain_text"))
    assert info.value.status == 0


def test_stream_can_be_iterated_once() -> None:
    client = skyl.Client("anthropic", transport=sandbox.transport())
    stream = client.stream(scenario_request("plain_text"))
    assert skyl.collect_stream(stream).text() == "Hello! No tools needed for that."
    with pytest.raises(skyl.UsageError, match="iterated only once"):
        list(stream)


def test_stream_error_status_raises_provider_error() -> None:
    client = skyl.Client("gemini", transport=sandbox.transport())
    with pytest.raises(skyl.ProviderError) as info:
        list(client.stream(skyl.Request("nope", [skyl.user_text("hi")])))
    assert info.value.status == 404 and info.value.provider == "gemini"


def test_streamed_and_complete_turns_are_the_same(provider: str) -> None:
    client = skyl.Client(provider, transport=sandbox.transport())
    whole = client.complete(scenario_request("parallel_calls"))
    streamed = skyl.collect_stream(client.stream(scenario_request("parallel_calls")))
    assert streamed.message == whole.message
    assert streamed.stop_reason == whole.stop_reason


def test_stream_splits_arguments_over_many_fragments(provider: str) -> None:
    client = skyl.Client(provider, transport=sandbox.transport())
    events = list(client.stream(scenario_request("multi_step")))
    starts = [event for event in events if isinstance(event, skyl.ToolCallStart)]
    deltas = [event for event in events if isinstance(event, skyl.ToolCallDelta)]
    assert [start.name for start in starts] == ["find_restaurant"]
    assert isinstance(events[-1], skyl.MessageEnd)
    if provider != "gemini":  # Gemini sends each call whole, as the real API does
        assert len(deltas) > 3


@pytest.mark.parametrize(
    ("provider", "first", "second"),
    [
        ("openai", skyl.StopReason.END_TURN, skyl.StopReason.TOOL_USE),
        ("openai-responses", skyl.StopReason.MAX_TOKENS, skyl.StopReason.END_TURN),
        ("anthropic", skyl.StopReason.MAX_TOKENS, skyl.StopReason.TOOL_USE),
        ("gemini", skyl.StopReason.TOOL_USE, skyl.StopReason.END_TURN),
    ],
)
def test_stop_reasons_disagree_with_the_call_list_as_providers_do(
    provider: str, first: skyl.StopReason, second: skyl.StopReason
) -> None:
    client = skyl.Client(provider, transport=sandbox.transport())
    req = scenario_request("stop_reason_mismatch")
    resp = client.complete(req)
    assert (resp.stop_reason, len(resp.tool_calls())) == (first, 1)
    req.messages.append(resp.message)
    req.messages.append(skyl.tool_result_message(resp.tool_calls()[0].id, "18C, clear"))
    resp = client.complete(req)
    assert (resp.stop_reason, resp.tool_calls()) == (second, [])


def test_openai_forced_tool_choice_reports_stop_with_calls() -> None:
    client = skyl.Client("openai", transport=sandbox.transport())
    req = scenario_request("single_call")
    req.tool_choice = "get_weather"
    resp = client.complete(req)
    assert resp.stop_reason is skyl.StopReason.END_TURN
    assert [call.name for call in resp.tool_calls()] == ["get_weather"]


def test_client_accepts_a_configured_httpx_client() -> None:
    http = httpx.Client(transport=sandbox.transport("plain_text"))
    client = skyl.Client("anthropic", http_client=http)
    assert client.complete(skyl.Request("x", [skyl.user_text("hi")])).text() == "Hello! No tools needed for that."
    client.close()
    assert not http.is_closed, "a client handed in stays open: its owner closes it"
    with pytest.raises(skyl.UsageError, match="not both"):
        skyl.Client("openai", http_client=http, transport=sandbox.transport())
