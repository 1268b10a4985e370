"""`sandbox record`'s proxy, in front of a local upstream (a `sandbox serve` on 127.0.0.1, never a
real host): what passes is answered unchanged, written as a scenario that replays, secrets left out."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

import sandbox
from sandbox import skyl
from sandbox.adapters._record import redacted, redacted_query
from tests.conftest import lesson_loop, scenario_request, scripted_run
from tests.loopback import recording
from tests.sdk_drivers import DRIVERS, in_process_options, server_options

pytestmark = pytest.mark.slow

SECRET = "sk-secret-4242"


def _base(provider: str, url: str) -> str:
    return f"{url}/v1" if provider.startswith("openai") else url


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_a_recorded_loop_replays_green_on_every_wire_format(provider: str, stream: bool, tmp_path: Path) -> None:
    with sandbox.serving() as upstream, recording(upstream.url, tmp_path) as (proxy, recorder):
        with skyl.Client(provider, base_url=_base(provider, proxy), api_key=SECRET) as client:
            recorded = lesson_loop(client, scenario_request("multi_step"), scripted_run("multi_step"), stream=stream)
        answered = [exchange.body for exchange in upstream.journal()]
    assert recorded.text().startswith('Done: "Le Bouchon, 4.7 stars"')
    lines = [json.loads(line) for line in recorder.raw.read_text().splitlines()]
    assert [line["response_body"].encode() for line in lines] == answered, "the upstream's answers, unchanged"
    scenario = sandbox.load_scenario(tmp_path / "recorded.toml")
    assert [[call.name for call in step.calls] for step in scenario.steps] == [
        ["find_restaurant"],
        ["check_availability"],
        ["book_table"],
        [],
    ]
    assert scenario.tool_outputs == sandbox.get_scenario("multi_step").tool_outputs
    replay = skyl.Client(provider, transport=sandbox.transport(scenario))
    again = lesson_loop(replay, scenario_request("multi_step"), scripted_run("multi_step"), stream=stream)
    assert again.text() == recorded.text()


def test_a_broken_loop_fails_on_replay_with_the_providers_error(tmp_path: Path) -> None:
    with sandbox.serving() as upstream, recording(upstream.url, tmp_path) as (proxy, _):
        with skyl.Client("anthropic", base_url=proxy, api_key=SECRET) as client:
            lesson_loop(client, scenario_request("single_call"), scripted_run("single_call"))
    scenario = sandbox.load_scenario(tmp_path / "recorded.toml")
    replay = skyl.Client("anthropic", transport=sandbox.transport(scenario))
    request = scenario_request("single_call")
    first = replay.complete(request)
    call = first.tool_calls()[0]
    request.messages.append(skyl.tool_result_message(call.id, "18C"))  # the model's turn never appended
    with pytest.raises(sandbox.ProviderError) as info:
        replay.complete(request)
    assert info.value.status == 400
    assert "tool_result" in str(info.value) and call.id in str(info.value)


def test_secrets_are_never_written(tmp_path: Path) -> None:
    with sandbox.serving() as upstream, recording(upstream.url, tmp_path) as (proxy, recorder):
        httpx.post(
            f"{proxy}/v1beta/models/plain_text:generateContent?key={SECRET}&alt=json",
            json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
            headers={"x-goog-api-key": SECRET, "cookie": f"session={SECRET}", "authorization": f"Bearer {SECRET}"},
        ).raise_for_status()
        for provider in ("openai", "anthropic"):
            with skyl.Client(provider, base_url=_base(provider, proxy), api_key=SECRET) as client:
                lesson_loop(client, scenario_request("single_call"), scripted_run("single_call"))
    written = "".join(path.read_text() for path in tmp_path.iterdir())
    assert SECRET not in written
    assert json.loads(recorder.raw.read_text().splitlines()[0])["query"] == "alt=json"
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "recorded.jsonl",
        "recorded.toml",
        "recorded_2.toml",
        "recorded_3.toml",
    ], "each conversation its own scenario"


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ({"Authorization": "Bearer x", "x-api-key": "x", "content-type": "application/json"}, ["content-type"]),
        ({"x-goog-api-key": "x", "api-key": "x", "Cookie": "a=b", "set-cookie": "a=b"}, []),
        ({"anthropic-version": "2023-06-01", "x-stainless-os": "Linux"}, ["anthropic-version", "x-stainless-os"]),
    ],
)
def test_redacted_drops_every_credential_header(given: dict[str, str], kept: list[str]) -> None:
    assert list(redacted(given)) == kept


def test_redacted_query_drops_key_parameters() -> None:
    assert redacted_query("alt=sse&key=AIza123&api_key=x&access_token=y") == "alt=sse"


def test_faults_the_upstream_played_become_the_scenarios_faults(tmp_path: Path) -> None:
    """The official OpenAI SDK retries the upstream's 429: the scenario plays the same 429 on replay,
    and the SDK, retrying again, gets the same answer."""
    with sandbox.serving(faults="rate_limit@2") as upstream, recording(upstream.url, tmp_path) as (proxy, _):
        answer = DRIVERS["openai"]("multi_step", **server_options("openai", proxy), max_retries=2)
    scenario = sandbox.load_scenario(tmp_path / "recorded.toml")
    assert scenario.faults == (sandbox.Fault("rate_limit", request=2),)
    transport = sandbox.httpx2_transport(scenario)
    replayed = DRIVERS["openai"]("multi_step", **in_process_options("openai", transport), max_retries=2)
    assert replayed == answer
    assert [exchange.status for exchange in transport.journal] == [200, 429, 200, 200, 200]


def test_an_upstream_that_does_not_answer_is_a_502_that_says_so(tmp_path: Path) -> None:
    with sandbox.serving() as upstream:
        gone = upstream.url
    with recording(gone, tmp_path) as (proxy, _):
        answer = httpx.post(f"{proxy}/v1/chat/completions", json={"model": "plain_text", "messages": []})
    assert answer.status_code == 502
    assert f"the upstream {gone} did not answer" in answer.json()["error"]["message"]


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_official_sdks_record_through_the_proxy_and_replay(provider: str, stream: bool, tmp_path: Path) -> None:
    """Each official SDK, unmodified, through the proxy (its `base_url`), then replayed in process (its
    `http_client` on the recorded scenario)."""
    with sandbox.serving() as upstream, recording(upstream.url, tmp_path) as (proxy, _):
        answer = DRIVERS[provider]("parallel_calls", stream=stream, **server_options(provider, proxy))
    scenario = sandbox.load_scenario(tmp_path / "recorded.toml")
    assert [step.calls for step in scenario.steps] == [
        step.calls for step in sandbox.get_scenario("parallel_calls").steps
    ]
    transport = sandbox.httpx2_transport(scenario)
    assert DRIVERS[provider]("parallel_calls", stream=stream, **in_process_options(provider, transport)) == answer


@pytest.mark.parametrize("provider", ["openai-responses", "anthropic", "gemini"])
def test_a_reasoning_model_records_as_a_reasoning_scenario(provider: str, tmp_path: Path) -> None:
    """Its turns came with reasoning: the scenario plays a reasoning model, with what it thought, and
    the loop must send that reasoning back on replay as it did to the upstream."""
    written = sandbox.get_scenario("multi_step_reasoning")

    def request() -> skyl.Request:
        return skyl.Request(
            model=written.name, messages=[skyl.user_text(written.prompt)], tools=list(written.tools), reasoning=True
        )

    with sandbox.serving() as upstream, recording(upstream.url, tmp_path) as (proxy, _):
        with skyl.Client(provider, base_url=_base(provider, proxy), api_key=SECRET) as client:
            recorded = lesson_loop(client, request(), scripted_run("multi_step"))
    scenario = sandbox.load_scenario(tmp_path / "recorded.toml")
    assert scenario.reasoning
    assert [step.reasoning for step in scenario.steps] == [step.thought() for step in written.steps]
    replay = skyl.Client(provider, transport=sandbox.transport(scenario))
    assert lesson_loop(replay, request(), scripted_run("multi_step")).text() == recorded.text()
