"""The engine through the in-process door: every scenario, every wire format, sync and streamed."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

import sandbox
from sandbox import Rule, skyl
from tests.conftest import lesson_loop, scenario_request, scripted_run


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize(
    ("name", "requests", "quoted"),
    [
        ("single_call", 2, ["18C, clear"]),
        ("parallel_calls", 2, ["18C, clear", "24C, humid", "21:30"]),
        ("parallel_rounds", 3, ["21C, sunny", "4C, snow", "14:05", "15:05"]),
        ("multi_step", 4, ["Le Bouchon, 4.7 stars", "confirmed, ref LB-2041"]),
        ("six_rounds", 7, ["FCO", "itinerary ready"]),
        ("tool_error_recovery", 3, ["ERROR: unknown city 'Pariss'", "18C, clear"]),
        ("stop_reason_mismatch", 2, ["18C, clear"]),
        ("plain_text", 1, []),
    ],
)
def test_scenario_completes_and_quotes_results(
    provider: str, name: str, requests: int, quoted: list[str], stream: bool
) -> None:
    transport = sandbox.transport()
    client = skyl.Client(provider, transport=transport)
    run = scripted_run(name)
    resp = lesson_loop(client, scenario_request(name), run, stream=stream)
    assert resp.tool_calls() == []
    for result in quoted:
        assert result in resp.text()
    assert len(transport.journal) == requests
    assert all(exchange.status == 200 for exchange in transport.journal)


def test_runaway_never_ends_until_the_budget_stops_it(provider: str) -> None:
    transport = sandbox.transport(budget=7)
    client = skyl.Client(provider, transport=transport)
    with pytest.raises(skyl.ProviderError, match="used its budget of 7 model requests") as info:
        lesson_loop(client, scenario_request("runaway"), scripted_run("runaway"), rounds=100)
    assert info.value.status == 400
    assert len(transport.journal) == 8
    assert transport.journal.last is not None and transport.journal.last.error is not None
    assert transport.journal.last.error.rule is Rule.BUDGET
    calls = [exchange.turn.message.tool_calls()[0] for exchange in list(transport.journal)[:-1]]  # type: ignore[union-attr]
    assert {call.name for call in calls} == {"get_weather"}
    assert len({call.id for call in calls}) == 7, "every round asks again with a fresh id"


def test_runaway_empty_asks_again_on_empty_results_and_answers_on_usable_ones(provider: str) -> None:
    client = skyl.Client(provider, transport=sandbox.transport())
    answers = iter(["", "  ", "Refunds within 30 days."])
    resp = lesson_loop(client, scenario_request("runaway_empty"), lambda call: next(answers))
    assert "Refunds within 30 days." in resp.text()


def test_resending_the_same_request_is_stopped_by_the_budget(provider: str) -> None:
    client = skyl.Client(provider, transport=sandbox.transport(budget=3))
    req = scenario_request("single_call")
    for _ in range(3):
        client.complete(req)
    with pytest.raises(skyl.ProviderError, match="arrived 4 times.*over the budget of 3.*never appends"):
        client.complete(req)


def test_asking_after_the_final_answer_has_clear_error(provider: str) -> None:
    client = skyl.Client(provider, transport=sandbox.transport())
    req = scenario_request("plain_text")
    req.messages.append(client.complete(req).message)
    req.messages.append(skyl.user_text("And again?"))
    with pytest.raises(skyl.ProviderError, match="is over: the model already gave its final answer"):
        client.complete(req)


def test_unknown_scenario_answers_with_the_providers_model_not_found(provider: str) -> None:
    client = skyl.Client(provider, transport=sandbox.transport())
    with pytest.raises(skyl.ProviderError, match="(?s)nope.*Known scenarios: .*multi_step") as info:
        client.complete(skyl.Request(model="nope", messages=[skyl.user_text("hi")]))
    assert info.value.status == 404


def test_missing_tools_has_clear_error_in_the_strict_echo(provider: str) -> None:
    client = skyl.Client(provider, transport=sandbox.transport(echo="strict"))
    req = skyl.Request(model="single_call", messages=[skyl.user_text("Weather?")])
    with pytest.raises(skyl.ProviderError, match="does not declare those tools.*tools=scenario.tools"):
        client.complete(req)


def test_pinned_scenario_ignores_the_model_name(provider: str) -> None:
    client = skyl.Client(provider, transport=sandbox.transport("plain_text"))
    resp = client.complete(skyl.Request(model="gpt-4o-mini", messages=[skyl.user_text("Hi")]))
    assert resp.text() == "Hello! No tools needed for that."


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [("POST", "/v1/chat/completion", 404), ("GET", "/v1/chat/completions", 404), ("POST", "/v2/x", 404)],
)
def test_unknown_path_gets_a_provider_shaped_404(method: str, path: str, status: int) -> None:
    exchange = sandbox.Engine().handle(method, path, b"{}")
    assert exchange.status == status
    assert json.loads(exchange.body)["error"]["message"].startswith(f"Invalid URL ({method} {path})\n\nsandbox: ")


@pytest.mark.parametrize(
    ("path", "provider", "fix"),
    [
        ("/v1/v1/messages", "anthropic", "the path repeats /v1: remove /v1 from the end of the client's base URL"),
        ("/messages", "anthropic", "the path lacks /v1: end the client's base URL with /v1"),
        ("/models/single_call:generateContent", "gemini", "the path lacks /v1beta"),
        ("/v1beta/v1beta/models/x:streamGenerateContent", "gemini", "the path repeats /v1beta"),
        ("/v1/v1/chat/completions", "openai", "the path repeats /v1"),
        ("/api/v1/responses", "openai-responses", "the path has '/api' before /v1: remove it"),
    ],
)
def test_a_wrong_base_url_gets_the_meant_providers_404_naming_the_right_one(path: str, provider: str, fix: str) -> None:
    """Clients disagree on what a base URL includes; the 404 says which provider and which base URL."""
    exchange = sandbox.Engine().handle("POST", path, b"{}")
    assert (exchange.status, exchange.provider) == (404, provider)
    assert exchange.error is not None and exchange.error.rule is Rule.NOT_FOUND
    assert fix in exchange.error.message and "Base URLs by client: http://HOST:PORT" in exchange.error.message
    wire = sandbox.wire.get_wire_format(provider)
    decoded = wire.decode_error(404, exchange.body)
    assert decoded.message == exchange.error.message  # the provider's own envelope, readable by its client
    assert exchange.headers["content-type"] == (
        "application/json; charset=UTF-8" if provider == "gemini" else "application/json"
    )


def test_the_anthropic_sdk_with_a_v1_base_url_gets_its_own_not_found_error_with_the_fix() -> None:
    import anthropic

    with sandbox.mock():
        client = anthropic.Anthropic(api_key="sk-ant", max_retries=0, base_url="https://api.anthropic.com/v1")
        with client, pytest.raises(anthropic.NotFoundError) as info:
            client.messages.create(model="plain_text", max_tokens=64, messages=[{"role": "user", "content": "Hi"}])
    assert "remove /v1 from the end of the client's base URL" in str(info.value)
    assert info.value.request_id is not None


def test_oversized_body_is_refused_with_413(provider: str) -> None:
    engine = sandbox.Engine(max_body_bytes=1000)
    path = _path(provider)
    exchange = engine.handle("POST", path, b" " * 1001)
    assert exchange.status == 413
    assert exchange.error is not None and "over 1000 bytes" in exchange.error.message


@pytest.mark.parametrize("body", [b"", b"{", b"[]", b"null", b'"x"', b"\xff\xfe", b'{"model": 3}'])
def test_malformed_body_gets_a_provider_shaped_400(provider: str, body: bytes) -> None:
    exchange = sandbox.Engine().handle("POST", _path(provider), body)
    assert exchange.status == 400
    assert "error" in json.loads(exchange.body)


def test_output_is_byte_identical_for_the_same_request(provider: str) -> None:
    bodies = []
    for stream in (False, True, False, True):
        client = skyl.Client(provider, transport=(transport := sandbox.transport()))
        req = scenario_request("parallel_calls")
        resp = skyl.collect_stream(client.stream(req)) if stream else client.complete(req)
        assert resp.tool_calls()
        bodies.append(transport.journal[0].body)
    assert bodies[0] == bodies[2] and bodies[1] == bodies[3]


_PROCESS_SCRIPT = """
import hashlib, sys
import sandbox
from sandbox import skyl
t = sandbox.transport()
client = skyl.Client(sys.argv[1], transport=t)
sc = sandbox.get_scenario("parallel_calls")
req = skyl.Request(model=sc.name, messages=[skyl.user_text(sc.prompt)], tools=list(sc.tools))
resp = client.complete(req)
req.messages.append(resp.message)
for call in resp.tool_calls():
    req.messages.append(skyl.tool_result_message(call.id, "ok " + call.name))
skyl.collect_stream(client.stream(req))
print(hashlib.sha256(b"".join(e.body for e in t.journal)).hexdigest())
"""


def test_output_is_byte_identical_across_processes(provider: str) -> None:
    digests = {
        subprocess.run(
            [sys.executable, "-c", _PROCESS_SCRIPT, provider],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(digests) == 1


def test_httpx_async_client_works_through_the_same_transport(provider: str) -> None:
    import asyncio

    async def main() -> skyl.Response:
        async with skyl.AsyncClient(provider, transport=sandbox.transport()) as client:
            req = scenario_request("single_call")
            resp = await client.complete(req)
            req.messages.append(resp.message)
            for call in resp.tool_calls():
                req.messages.append(skyl.tool_result_message(call.id, "18C"))
            return await skyl.acollect_stream(client.stream(req))

    assert "18C" in asyncio.run(main()).text()


def test_plain_httpx_client_gets_real_provider_json() -> None:
    with httpx.Client(transport=sandbox.transport("plain_text")) as http:
        reply = http.post(
            "https://api.openai.com/v1/chat/completions",
            json={"model": "x", "messages": [{"role": "user", "content": "hi"}]},
        )
    assert reply.status_code == 200
    assert reply.json()["choices"][0]["message"]["content"] == "Hello! No tools needed for that."


def _path(provider: str) -> str:
    return {
        "openai": "/v1/chat/completions",
        "openai-responses": "/v1/responses",
        "anthropic": "/v1/messages",
        "gemini": "/v1beta/models/single_call:generateContent",
    }[provider]


def test_journal_keeps_the_newest_exchanges_and_counts_the_rest() -> None:
    transport = sandbox.transport("plain_text", journal_size=3)
    client = skyl.Client("openai", transport=transport)
    for index in range(5):
        client.complete(skyl.Request("x", [skyl.user_text(f"hi {index}")]))
    assert len(transport.journal) == 3 and transport.journal.dropped == 2
    assert b"hi 4" in transport.journal[-1].request_body and b"hi 2" in transport.journal[0].request_body
