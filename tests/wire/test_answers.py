"""What a streamed answer carries, for every wire format: each frame is the compact JSON text of its
object, two senders of one step get their own id in every frame and answers that differ in nothing
else, each answer's usage counts its own request, and a Responses answer echoes its request's own
values (`1` and `1.0` apart) and obfuscates its deltas unless asked not to."""

from __future__ import annotations

import json
from typing import Any

import pytest

import sandbox
from sandbox import skyl
from sandbox.engine._catalogue import catalogue
from sandbox.engine._engine import Engine, Exchange
from sandbox.wire._sse import dumps, iter_sse, to_bytes
from tests.corpus import play_loop

STREAMED = ("openai", "openai-responses", "anthropic", "gemini")
RESPONSES = "/v1/responses"


def _answers(engine: Engine, provider: str, name: str, *, reasoning: bool) -> list[Exchange]:
    """The streamed answers of one tool loop of `name`, played to its end (at most 6 rounds)."""
    transport = sandbox.transport(engine=engine)
    client = skyl.Client(provider, transport=transport)
    scenario = engine.scenarios[name]
    req = skyl.Request(
        model=name, messages=[skyl.user_text(scenario.prompt)], tools=list(scenario.tools), reasoning=reasoning
    )
    play_loop(client, req, stream=True, result=lambda call: f'{call.name} \u00e9 "ok" {json.dumps(call.arguments)}')
    return [exchange for exchange in transport.journal if exchange.status == 200 and exchange.turn is not None]


def _redumped(chunk: bytes, provider: str) -> bytes:
    """The frame as `sse_frame` writes the object its data decodes to: the same bytes if the frame's
    text is the compact JSON `dumps` writes (key order is kept by `json.loads`)."""
    newline = "\r\n" if provider == "gemini" else "\n"
    (event,) = list(iter_sse([chunk]))
    data = event.data if event.data == "[DONE]" else dumps(json.loads(event.data))
    head = f"event: {event.event}{newline}" if event.event is not None else ""
    return to_bytes(f"{head}data: {data}{newline}{newline}")


@pytest.mark.slow
@pytest.mark.parametrize("reasoning", [False, True], ids=["plain", "reasoning"])
@pytest.mark.parametrize("provider", STREAMED)
def test_each_stream_frame_is_the_compact_json_of_its_object(provider: str, reasoning: bool) -> None:
    answered = 0
    for name in sorted(catalogue()):
        for exchange in _answers(Engine(), provider, name, reasoning=reasoning):
            assert [_redumped(chunk, provider) for chunk in exchange.chunks] == list(exchange.chunks), name
            answered += 1
    assert answered > 40


def _body(provider: str, prompt: str) -> tuple[str, str | None, bytes]:
    """The second request of a `single_call` loop (the final answer) for `provider` (path, query, body)."""
    transport = sandbox.transport()
    client = skyl.Client(provider, transport=transport)
    scenario = sandbox.get_scenario("single_call")
    req = skyl.Request(model="single_call", messages=[skyl.user_text(prompt)], tools=list(scenario.tools))
    resp = client.complete(req)
    req.messages += [resp.message, *(skyl.tool_result_message(call.id, "18C") for call in resp.tool_calls())]
    url, body, _ = client._prepare(req, stream=True)
    path, _, query = url.split("://", 1)[1].partition("/")[2].partition("?")
    return "/" + path, query or None, body


def _events(exchange: Exchange) -> list[dict[str, Any]]:
    return [json.loads(event.data) for event in iter_sse(exchange.chunks) if event.data != "[DONE]"]


def _ids(exchange: Exchange, provider: str) -> list[str]:
    """The answer's id in each frame that carries one (every Chat chunk but `[DONE]`, Anthropic's
    `message_start`, the response in each Responses frame that holds it)."""
    events = _events(exchange)
    if provider == "anthropic":
        return [event["message"]["id"] for event in events if event["type"] == "message_start"]
    if provider == "openai-responses":
        return [event["response"]["id"] for event in events if "response" in event]
    return [event["id"] for event in events]


@pytest.mark.parametrize("provider", ["openai", "openai-responses", "anthropic"])
def test_two_senders_of_one_step_get_their_own_id_in_every_frame(provider: str) -> None:
    path, query, body = _body(provider, "What's the weather in Paris?")
    engine = Engine()
    first = engine.handle("POST", path, body, client="a", query=query)
    second = engine.handle("POST", path, body, client="b", query=query)
    assert first.status == second.status == 200
    first_ids, second_ids = _ids(first, provider), _ids(second, provider)
    assert len(set(first_ids)) == len(set(second_ids)) == 1 and first_ids[0] != second_ids[0]
    assert first_ids[0].encode() not in b"".join(second.chunks)
    one, other = (
        b"".join(x.chunks).replace(i[0].encode(), b"ID") for x, i in ((first, first_ids), (second, second_ids))
    )
    assert one == other, "two answers of one step differ in more than their ids"


def _prompt_counts(exchange: Exchange, provider: str) -> list[int]:
    """Every count of the request's tokens the frames carry (Chat's last chunk, Anthropic's start and
    delta, every Gemini chunk, the completed Responses object)."""
    events = _events(exchange)
    if provider == "openai":
        return [event["usage"]["prompt_tokens"] for event in events if event.get("usage")]
    if provider == "openai-responses":
        usages = [event["response"]["usage"] for event in events if "response" in event]
        return [usage["input_tokens"] for usage in usages if usage]
    if provider == "anthropic":
        usages = [event.get("message", event).get("usage") for event in events]
        return [usage["input_tokens"] for usage in usages if usage]
    return [event["usageMetadata"]["promptTokenCount"] for event in events]


@pytest.mark.parametrize("provider", STREAMED)
def test_usage_of_each_answer_counts_its_own_request(provider: str) -> None:
    """Two requests of one step but of different lengths: each answer's usage counts its own request."""
    engine = Engine()
    counts = []
    for prompt in ("Weather?", "What's the weather in Paris, and in the rest of France, this week?"):
        path, query, body = _body(provider, prompt)
        exchange = engine.handle("POST", path, body, client="a", query=query)
        assert exchange.status == 200 and exchange.turn is not None
        expected = {"openai": 1, "openai-responses": 1, "anthropic": 2, "gemini": len(exchange.chunks)}[provider]
        assert _prompt_counts(exchange, provider) == [exchange.turn.usage.input_tokens] * expected
        counts.append(exchange.turn.usage.input_tokens)
    assert counts[0] < counts[1]


_TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}


def test_a_responses_answer_echoes_its_own_request_s_values() -> None:
    """`temperature: 1` and `1.0` are equal in Python and different on the wire: each answer echoes its
    own request's text, in whichever order they come; a boolean is refused before any echo."""
    engine = Engine()
    echoed = []
    for temperature in (1, 1.0, 1, True):
        body = {"model": "single_call", "input": "Weather?", "tools": [_TOOL], "temperature": temperature}
        exchange = engine.handle("POST", RESPONSES, json.dumps(body).encode())
        if temperature is True:
            assert exchange.status == 400
            continue
        echoed.append(json.loads(exchange.body)["temperature"])
        assert (b'"temperature":1,' if type(temperature) is int else b'"temperature":1.0,') in exchange.body
    assert [type(value) for value in echoed] == [int, float, int]


def test_a_responses_stream_obfuscates_its_deltas_unless_asked_not_to() -> None:
    path, query, body = _body("openai-responses", "Weather?")
    off = json.dumps({**json.loads(body), "stream_options": {"include_obfuscation": False}}).encode()
    engine = Engine()
    with_it, without = (engine.handle("POST", path, sent, query=query) for sent in (body, off))
    deltas = [event for event in _events(with_it) if event["type"].endswith(".delta")]
    assert deltas and all(len(event["delta"]) + len(event["obfuscation"]) == 16 for event in deltas)
    assert all("obfuscation" not in event for event in _events(without))
    assert [event["sequence_number"] for event in _events(with_it)] == list(range(len(with_it.chunks)))
