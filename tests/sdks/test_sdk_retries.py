"""The official SDKs against scripted faults, as against the real API: their own retries get through
a 429, a 529 or 503 and a cut connection and end with the scripted answer, in process and over HTTP;
with retries off each raises the error type its users catch. Scripted hints are 20 ms, so the whole
file waits a fraction of a second."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import sandbox
from tests.loopback import serving
from tests.sdk_drivers import DRIVERS, in_process_options, server_options

RETRYING = ("openai", "openai-responses", "anthropic")
"""The SDKs that retry by default (Stainless `max_retries=2`); google-genai retries only when told."""


def _options(provider: str, transport: sandbox.Httpx2Transport | None = None, base: str = "") -> dict[str, Any]:
    options = in_process_options(provider, transport) if transport is not None else server_options(provider, base)
    if provider == "gemini":
        from google.genai import types

        options["retry_options"] = types.HttpRetryOptions(attempts=3, initial_delay=0.03, max_delay=0.03, jitter=0)
    else:
        options["max_retries"] = 2
    return options


@pytest.fixture(scope="module")
def faulty_server() -> Iterator[str]:
    """A server whose every conversation gets a rate limit on request 1 and an overload on request 2."""
    with serving(sandbox.Engine(faults="rate_limit@1,overloaded@2")) as base:
        yield base


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_sdk_retries_through_a_rate_limit_and_an_overload_in_process(provider: str, stream: bool) -> None:
    transport = sandbox.httpx2_transport(faults="rate_limit@1,overloaded@2")
    answer = DRIVERS[provider]("single_call", stream=stream, **_options(provider, transport))
    assert "18C, clear" in answer
    overloaded = 529 if provider == "anthropic" else 503
    assert [exchange.status for exchange in transport.journal] == [429, 200, overloaded, 200]
    assert [exchange.fault.kind if exchange.fault else None for exchange in transport.journal] == [
        "rate_limit",
        None,
        "overloaded",
        None,
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_sdk_retries_through_a_rate_limit_and_an_overload_over_http(
    provider: str, faulty_server: str, stream: bool
) -> None:
    answer = DRIVERS[provider]("multi_step", stream=stream, **_options(provider, base=faulty_server))
    assert "confirmed, ref LB-2041" in answer


@pytest.mark.parametrize("where", ["in_process", "http"])
@pytest.mark.parametrize("provider", RETRYING)
def test_sdk_retries_a_connection_cut_before_any_byte(provider: str, where: str) -> None:
    if where == "http":
        with serving(sandbox.Engine(faults="cut@1")) as base:
            answer = DRIVERS[provider]("single_call", **_options(provider, base=base))
    else:
        transport = sandbox.httpx2_transport(faults="cut@1")
        answer = DRIVERS[provider]("single_call", **_options(provider, transport))
        assert [exchange.fault is not None for exchange in transport.journal] == [True, False, False]
    assert "18C, clear" in answer


def test_openai_without_retries_raises_rate_limit_error_with_the_hint() -> None:
    import openai

    transport = sandbox.httpx2_transport(faults="rate_limit@1")
    with pytest.raises(openai.RateLimitError) as info:
        DRIVERS["openai"]("single_call", **in_process_options("openai", transport))
    assert info.value.code == "rate_limit_exceeded"
    assert info.value.response.headers["retry-after-ms"] == "20"
    assert info.value.response.headers["x-ratelimit-remaining-requests"] == "0"
    assert info.value.request_id == transport.journal[0].headers["x-request-id"]


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("rate_limit@1", "RateLimitError"),
        ("overloaded@1", "OverloadedError"),
        ("server_error@1", "InternalServerError"),
        ("server_error@1:status=503", "ServiceUnavailableError"),
    ],
)
def test_anthropic_without_retries_raises_the_class_its_users_catch(spec: str, error: str) -> None:
    import anthropic

    transport = sandbox.httpx2_transport(faults=spec)
    with pytest.raises(getattr(anthropic, error)) as info:
        DRIVERS["anthropic"]("single_call", **in_process_options("anthropic", transport))
    assert info.value.response.headers["x-should-retry"] == "true"
    assert info.value.request_id == transport.journal[0].headers["request-id"]


def test_gemini_without_retry_options_raises_client_error_at_once() -> None:
    from google.genai import errors

    transport = sandbox.httpx2_transport(faults="rate_limit@1")
    with pytest.raises(errors.ClientError) as info:
        DRIVERS["gemini"]("single_call", **in_process_options("gemini", transport))
    assert info.value.code == 429 and info.value.status == "RESOURCE_EXHAUSTED"
    assert len(transport.journal) == 1  # python-genai does not retry unless retry_options say so
    retry = [detail for detail in info.value.details["error"]["details"] if "RetryInfo" in detail["@type"]]
    assert retry == [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.020s"}]


def test_gemini_overload_raises_server_error() -> None:
    from google.genai import errors

    transport = sandbox.httpx2_transport(faults="overloaded@1")
    with pytest.raises(errors.ServerError) as info:
        DRIVERS["gemini"]("single_call", **in_process_options("gemini", transport))
    assert (info.value.code, info.value.message) == (503, "The model is overloaded. Please try again later.")


def test_anthropic_stream_error_event_raises_with_the_overloaded_type() -> None:
    import anthropic

    transport = sandbox.httpx2_transport(faults="stream_error@1:after=2")
    with pytest.raises(anthropic.APIStatusError) as info:
        DRIVERS["anthropic"]("single_call", stream=True, **in_process_options("anthropic", transport))
    assert info.value.body == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


def test_openai_chat_stream_error_raises_api_error() -> None:
    import openai

    transport = sandbox.httpx2_transport(faults="stream_error@1:after=2")
    with pytest.raises(openai.APIError, match="The server had an error processing your request"):
        DRIVERS["openai"]("single_call", stream=True, **in_process_options("openai", transport))


def test_openai_responses_stream_error_is_an_error_event_then_response_failed() -> None:
    import openai

    transport = sandbox.httpx2_transport("single_call", faults="stream_error@1:after=2")
    client = openai.OpenAI(api_key="sk-test", max_retries=0, **in_process_options("openai", transport))
    scenario = sandbox.get_scenario("single_call")
    tools: Any = [{"type": "function", "name": t.name, "parameters": t.parameters} for t in scenario.tools]
    with client:
        events = list(client.responses.create(model="single_call", input=scenario.prompt, tools=tools, stream=True))
    assert [event.type for event in events][-2:] == ["error", "response.failed"]
    assert events[-2].code == "server_is_overloaded"  # type: ignore[union-attr]
    assert events[-1].response.status == "failed"  # type: ignore[union-attr]


def test_gemini_stream_error_raises_server_error() -> None:
    from google.genai import errors

    transport = sandbox.httpx2_transport(faults="stream_error@1:after=1")
    with pytest.raises(errors.ServerError) as info:
        DRIVERS["gemini"]("single_call", stream=True, **in_process_options("gemini", transport))
    assert info.value.code == 503


@pytest.mark.parametrize("provider", RETRYING)
def test_a_stream_cut_midway_raises_a_connection_error_over_http(provider: str) -> None:
    """Both SDKs wrap the broken read in their APIConnectionError (openai `_streaming._iter_events`,
    anthropic `_streaming.iter_response_bytes`), and neither retries a stream it already began."""
    import anthropic
    import openai

    expected = openai.APIConnectionError if provider.startswith("openai") else anthropic.APIConnectionError
    with serving(sandbox.Engine(faults="cut@1:after=3")) as base, pytest.raises(expected):
        DRIVERS[provider]("single_call", stream=True, **server_options(provider, base))
