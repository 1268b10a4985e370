"""Faults: the spec and its one-line refusals, the TOML and Python forms, and what each kind does on
the wire, deterministically, through the skyl client."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import sandbox
from sandbox import Fault, ScenarioError, Step, skyl
from sandbox.engine.faults import parse_faults
from sandbox.wire._retry_hints import read_hint
from tests.conftest import scenario_request


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"kind": "ratelimit"}, r"Unknown fault kind 'ratelimit': use one of rate_limit, overloaded, server_error, "),
        ({"kind": "rate_limit", "status": 503}, r"status=503 is a status openai, openai-responses, anthropic, gemini"),
        (
            {"kind": "overloaded", "status": 529},
            r"status=529 is a status openai, openai-responses, gemini never sends for it .*: add provider='anthropic'",
        ),
        (
            {"kind": "overloaded", "status": 529, "provider": "gemini"},
            r"gemini never sends for it \(it sends gemini 503\)",
        ),
        ({"kind": "cut", "status": 500}, r"status= belongs to rate_limit, overloaded, server_error"),
        ({"kind": "rate_limit", "times": 0}, r"times=0; use a whole number from 1 to 10"),
        ({"kind": "rate_limit", "retry_after": -1}, r"retry_after=-1; use seconds from 0 to 60"),
        ({"kind": "latency"}, r"give first_byte= or between="),
        ({"kind": "rate_limit", "after": 2}, r"after= counts stream frames"),
        ({"kind": "cut", "provider": "mistral"}, r"provider='mistral'; use one of openai, openai-responses"),
    ],
    ids=lambda value: str(value)[:30],
)
def test_fault_spec_has_clear_error(given: dict[str, object], message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as info:
        Fault(**given)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)


def test_fault_past_the_budget_is_refused_when_loaded() -> None:
    with pytest.raises(
        ScenarioError, match=r"request=51 is past the budget of 50 model requests; use a request from 1 to 50"
    ):
        sandbox.transport(faults=[Fault("rate_limit", request=51)])
    with pytest.raises(ScenarioError, match=r"scenario 'flaky':.*request=6 is past the budget of 5"):
        sandbox.Engine(_flaky(Fault("overloaded", request=6)), budget=5)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("rate_limit@2", (Fault("rate_limit", request=2),)),
        (
            "cut@3:after=2, latency:first_byte=0.05",
            (Fault("cut", request=3, after=2), Fault("latency", first_byte=0.05)),
        ),
        ("overloaded:times=2:provider=anthropic", (Fault("overloaded", times=2, provider="anthropic"),)),
    ],
)
def test_parse_faults_reads_the_ad_hoc_form(spec: str, expected: tuple[Fault, ...]) -> None:
    assert parse_faults(spec) == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", r"give at least one, e.g. 'rate_limit@2'"),
        ("rate_limit@two", r"request='two' is not a number"),
        ("cut:afterr=2", r"'afterr=2' is not NAME=VALUE with NAME one of after, between, first_byte"),
    ],
)
def test_parse_faults_has_clear_error(spec: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_faults(spec)


def _flaky(*faults: Fault, step_fault: Fault | None = None) -> sandbox.Scenario:
    base = sandbox.get_scenario("single_call")
    steps = [Step(calls=base.steps[0].calls, fault=step_fault), base.steps[1]]
    return sandbox.Scenario(
        "flaky", steps=steps, tools=base.tools, prompt=base.prompt, tool_outputs=base.tool_outputs, faults=faults
    )


def test_step_fault_and_numbered_faults_from_toml(tmp_path: Path) -> None:
    text = """
name = "flaky_toml"
prompt = "What's the weather in Paris?"
[[tools]]
name = "get_weather"
[[steps]]
calls = [{ name = "get_weather", arguments = { city = "Paris" } }]
fault = { kind = "rate_limit", retry_after = 0.01 }
[[steps]]
text = "It is {last[0]}."
[[faults]]
kind = "overloaded"
request = 2
times = 2
"""
    (tmp_path / "flaky.toml").write_text(text)
    scenario = sandbox.load_scenario(tmp_path / "flaky.toml")
    assert scenario.steps[0].fault == Fault("rate_limit", retry_after=0.01)
    assert scenario.faults == (Fault("overloaded", request=2, times=2),)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('fault = { kind = "rate_limit", request = 2 }', r"Step\(fault=.*give a sandbox.Fault without request="),
        ('fault = { kind = "rate_limit", wait = 1 }', r"step 0: fault: a fault has no wait; its keys are after, "),
        ('fault = "rate_limit"', r"a fault is a table such as"),
    ],
)
def test_toml_fault_has_clear_error(tmp_path: Path, table: str, message: str) -> None:
    steps = f'[[steps]]\ncalls = [{{ name = "t" }}]\n{table}\n[[steps]]\ntext = "done"\n'
    (tmp_path / "bad.toml").write_text(f'name = "bad"\n[[tools]]\nname = "t"\n{steps}')
    with pytest.raises(ScenarioError, match=message):
        sandbox.load_scenario(tmp_path / "bad.toml")


def test_scenario_faults_need_a_request_number() -> None:
    with pytest.raises(ScenarioError, match=r"each needs request=N"):
        _flaky(Fault("rate_limit"))


def test_step_fault_plays_on_each_attempt_then_the_step_answers(provider: str) -> None:
    transport = sandbox.transport(_flaky(step_fault=Fault("overloaded", times=2, retry_after=0)))
    client = skyl.Client(provider, transport=transport)
    request = scenario_request("single_call")
    request.model = "flaky"
    for _ in range(2):
        with pytest.raises(sandbox.ProviderError) as info:
            client.complete(request)
        assert info.value.status == (529 if provider == "anthropic" else 503)
    assert client.complete(request).tool_calls()
    assert [exchange.fault is not None for exchange in transport.journal] == [True, True, False]
    assert transport.journal[0].error is not None and transport.journal[0].error.rule is sandbox.Rule.FAULT


def test_faults_play_per_request_number_within_each_conversation(provider: str) -> None:
    """Request 2 of every conversation gets its 429, whatever came before; request 1 never does."""
    transport = sandbox.transport(faults="rate_limit@2")
    client = skyl.Client(provider, transport=transport)
    request = scenario_request("single_call")
    response = client.complete(request)
    request.messages.append(response.message)
    request.messages.append(skyl.tool_result_message(response.tool_calls()[0].id, "18C, clear"))
    with pytest.raises(sandbox.ProviderError) as info:
        client.complete(request)
    assert (info.value.status, info.value.retry_after) == (429, 0.02)
    time.sleep(info.value.retry_after)
    assert "18C, clear" in client.complete(request).text()


def test_a_retry_before_the_hint_has_passed_is_still_refused(provider: str) -> None:
    """As on the real API: coming back early gets the same error again, and counts as no attempt."""
    transport = sandbox.transport(faults=[Fault("rate_limit", retry_after=0.2)])
    client = skyl.Client(provider, transport=transport)
    for _ in range(3):
        with pytest.raises(sandbox.ProviderError, match="429"):
            client.complete(scenario_request("single_call"))
    errors = [exchange.error for exchange in transport.journal]
    assert [getattr(error, "early", None) for error in errors] == [False, True, True]


def test_faulted_answers_are_byte_identical_across_engines(provider: str) -> None:
    bodies = []
    for _ in range(2):
        transport = sandbox.transport(faults="rate_limit@1,stream_error@1:after=2")
        client = skyl.Client(provider, transport=transport)
        for stream in (False, True):
            with pytest.raises(sandbox.ProviderError):
                if stream:
                    skyl.collect_stream(client.stream(scenario_request("single_call")))
                else:
                    client.complete(scenario_request("single_call"))
        bodies.append([(exchange.status, dict(exchange.headers), exchange.body) for exchange in transport.journal])
    assert bodies[0] == bodies[1]


@pytest.mark.parametrize(
    ("provider", "status", "kind"),
    [("openai", 429, "requests"), ("anthropic", 429, "rate_limit_error"), ("gemini", 429, "RESOURCE_EXHAUSTED")],
)
def test_provider_error_carries_status_type_and_hint(provider: str, status: int, kind: str) -> None:
    client = skyl.Client(provider, transport=sandbox.transport(faults=[Fault("rate_limit", retry_after=0.05)]))
    with pytest.raises(sandbox.ProviderError) as info:
        client.complete(scenario_request("single_call"))
    assert (info.value.status, info.value.error_type, info.value.retry_after) == (status, kind, 0.05)


def test_rate_limit_bodies_are_each_providers_own() -> None:
    transport = sandbox.transport(faults="rate_limit@1")
    for provider in sandbox.PROVIDERS:
        with pytest.raises(sandbox.ProviderError):
            skyl.Client(provider, transport=transport).complete(scenario_request("single_call"))
    openai, responses, anthropic, gemini = transport.journal
    assert json.loads(openai.body)["error"]["code"] == "rate_limit_exceeded"
    assert openai.headers["x-ratelimit-reset-requests"] == "20ms" and openai.headers["retry-after"] == "1"
    assert json.loads(anthropic.body)["error"] == {
        "type": "rate_limit_error",
        "message": "This request would exceed your account's rate limit. Please try again later.",
    }
    assert anthropic.headers["anthropic-ratelimit-requests-remaining"] == "0"
    assert json.loads(anthropic.body)["request_id"] == anthropic.headers["request-id"]
    assert gemini.body.startswith(b'{\n  "error": {\n    "code": 429,')
    assert read_hint({}, json.loads(gemini.body)) == 0.02
    assert responses.status == 429


@pytest.mark.parametrize("stream", [False, True])
def test_a_cut_connection_is_a_connection_error_with_nothing_usable(provider: str, stream: bool) -> None:
    client = skyl.Client(provider, transport=sandbox.transport(faults="cut@1:after=2"))
    with pytest.raises(sandbox.ProviderError, match="closed before the answer was complete") as info:
        if stream:
            skyl.collect_stream(client.stream(scenario_request("single_call")))
        else:
            client.complete(scenario_request("single_call"))
    assert (info.value.status, info.value.error_type) == (0, "connection_error")


def test_latency_slows_the_answer_without_changing_it(provider: str) -> None:
    plain = sandbox.transport()
    slow = sandbox.transport(faults="latency:first_byte=0.01:between=0.001")
    for transport in (plain, slow):
        skyl.collect_stream(skyl.Client(provider, transport=transport).stream(scenario_request("single_call")))
    assert plain.journal[0].chunks == slow.journal[0].chunks
    assert slow.journal[0].fault == Fault("latency", first_byte=0.01, between=0.001)


def test_a_truncated_stream_ends_cleanly_without_its_final_event(provider: str) -> None:
    transport = sandbox.transport(faults="truncated:after=3")
    with pytest.raises(sandbox.ProviderError, match="ended before"):
        skyl.collect_stream(skyl.Client(provider, transport=transport).stream(scenario_request("single_call")))
    assert len(transport.journal[0].chunks) == 3


def test_faults_for_one_provider_leave_the_others_alone() -> None:
    transport = sandbox.transport(faults=[Fault("overloaded", status=529, provider="anthropic")])
    assert skyl.Client("openai", transport=transport).complete(scenario_request("single_call")).tool_calls()
    with pytest.raises(sandbox.ProviderError, match="overloaded_error"):
        skyl.Client("anthropic", transport=transport).complete(scenario_request("single_call"))


def test_serve_with_a_bad_fault_spec_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    from sandbox.cli import main

    assert main(["serve", "--faults", "rate_limit@0"]) == 2
    assert capsys.readouterr().err == (
        "sandbox: error: faults='rate_limit@0': fault 'rate_limit': request=0; use a whole number at least 1.\n"
    )
