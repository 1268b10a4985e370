"""A plain answer's body (`WireFormat.encode_answer`) is byte for byte the text `dumps` writes for the
answer object (`encode_response`), for every scenario of the catalogue and the request options the
answer echoes; a Responses stream carries the same object, and kept state stores its items."""

from __future__ import annotations

import json
from typing import Any

import pytest

import sandbox
from sandbox import skyl
from sandbox.engine._catalogue import catalogue
from sandbox.engine._engine import Engine, Exchange
from sandbox.wire import get_wire_format
from sandbox.wire._sse import dumps, to_bytes
from tests.corpus import play_loop


def _answers(
    engine: Engine, provider: str, name: str, *, reasoning: bool, stream: bool = False, **extra: Any
) -> list[Exchange]:
    """The answers of one tool loop of `name`, played to its end (at most 6 rounds)."""
    transport = sandbox.transport(engine=engine)
    client = skyl.Client(provider, transport=transport)
    scenario = engine.scenarios[name]
    req = skyl.Request(
        model=name, messages=[skyl.user_text(scenario.prompt)], tools=list(scenario.tools), reasoning=reasoning, **extra
    )
    play_loop(
        client, req, stream=stream, result=lambda call: f'{call.name} \u00e9 "ok" {json.dumps(dict(call.arguments))}'
    )
    return [exchange for exchange in transport.journal if exchange.status == 200 and exchange.turn is not None]


def _expected(exchange: Exchange) -> bytes:
    assert exchange.provider is not None and exchange.turn is not None and exchange.conversation is not None
    wire = get_wire_format(exchange.provider)
    return to_bytes(dumps(wire.encode_response(exchange.turn, exchange.conversation)))


@pytest.mark.parametrize("reasoning", [False, True], ids=["plain", "reasoning"])
def test_answer_text_is_the_encoded_object_for_every_scenario(provider: str, reasoning: bool) -> None:
    answered = 0
    for name in sorted(catalogue()):
        for exchange in _answers(Engine(), provider, name, reasoning=reasoning):
            assert exchange.body == _expected(exchange), (name, exchange.step)
            answered += 1
    assert answered > 40


@pytest.mark.parametrize("model", ['caf\u00e9 "quoted"', "back\\slash", "\U0001f600"])
def test_answer_text_echoes_any_model_name(provider: str, model: str) -> None:
    """A pinned scenario answers whatever model the request names: the echo is the name's JSON text."""
    engine = Engine("single_call")
    transport = sandbox.transport(engine=engine)
    client = skyl.Client(provider, transport=transport)
    scenario = engine.scenarios["single_call"]
    client.complete(skyl.Request(model=model, messages=[skyl.user_text("hi")], tools=list(scenario.tools)))
    (exchange,) = list(transport.journal)
    assert exchange.status == 200
    assert exchange.body == _expected(exchange)


_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "minimum": 1.0}}},
}


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"instructions": "Be brief.", "max_output_tokens": 64, "temperature": 0, "store": False},
        {"parallel_tool_calls": False, "temperature": 0.25, "tool_choice": "required", "top_p": 0.5},
        {"tool_choice": {"type": "function", "name": "get_weather"}, "reasoning": {"effort": "low"}},
        {"tools": [{**_TOOL, "strict": True}], "metadata": {"a": "b"}, "user": "u\u00e9"},
        {"tools": [], "instructions": '\u00e9t\u00e9 "x"'},
    ],
    ids=["bare", "echoed", "required", "forced", "strict", "no-tools"],
)
def test_responses_answer_text_echoes_the_request_options(options: dict[str, Any]) -> None:
    """Every field a Responses answer echoes from its request, as sent: the text is the object's."""
    body = {"model": "plain_text", "input": "hi", "tools": [_TOOL], **options}
    exchange = Engine().handle("POST", "/v1/responses", json.dumps(body).encode())
    assert exchange.status == 200, exchange.body
    assert exchange.body == _expected(exchange)


@pytest.mark.parametrize(
    "options",
    [{}, {"tool_choice": "required"}, {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}}],
    ids=["bare", "required", "forced"],
)
def test_chat_answer_text_finish_reason_follows_tool_choice(options: dict[str, Any]) -> None:
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    body = {"model": "single_call", "messages": [{"role": "user", "content": "hi"}], "tools": [tool], **options}
    exchange = Engine().handle("POST", "/v1/chat/completions", json.dumps(body).encode())
    assert exchange.status == 200, exchange.body
    assert exchange.body == _expected(exchange)


def test_responses_answer_is_stored_as_its_output_items() -> None:
    """Kept state stores the answer's `output` items as their compact JSON, the same bytes whether the
    answer came as a plain body (its items written once, with the body) or as a stream (encoded apart)."""
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    stored = []
    for stream in (False, True):
        engine = Engine()
        body = {"model": "single_call", "input": "caf\u00e9?", "tools": [tool], "stream": stream}
        exchange = engine.handle("POST", "/v1/responses", json.dumps(body).encode())
        assert exchange.status == 200 and exchange.turn is not None and exchange.conversation is not None
        answer = get_wire_format("openai-responses").encode_response(exchange.turn, exchange.conversation)
        entry = engine.kept.store.get(answer["id"])
        assert entry is not None
        assert entry.items.endswith(b"," + dumps(answer["output"]).encode()[1:-1])
        stored.append(entry.items)
    assert stored[0] == stored[1]


@pytest.mark.parametrize("reasoning", [False, True], ids=["plain", "reasoning"])
def test_responses_stream_carries_the_encoded_object(reasoning: bool) -> None:
    """A Responses stream sends its response object whole, in progress first and complete last: each
    is the text `dumps` writes for `encode_response`'s object (the in-progress one without output,
    usage or incomplete details), written by the same text builder as the plain answer."""
    answered = 0
    for name in sorted(catalogue()):
        for exchange in _answers(Engine(), "openai-responses", name, reasoning=reasoning, stream=True):
            assert exchange.turn is not None and exchange.conversation is not None
            final = get_wire_format("openai-responses").encode_response(exchange.turn, exchange.conversation)
            pending = {**final, "status": "in_progress", "incomplete_details": None, "output": [], "usage": None}
            frames = [chunk.decode() for chunk in exchange.chunks]
            assert f',"response":{dumps(pending)}}}' in frames[0], name
            assert f',"response":{dumps(final)}}}' in frames[-1], name
            answered += 1
    assert answered > 40


@pytest.mark.parametrize("stop", ["end_turn", "refusal"])
@pytest.mark.parametrize("texts", [1, 2], ids=["one text", "two texts"])
def test_responses_output_items_are_one_message_of_the_turn_s_texts(stop: str, texts: int) -> None:
    """A turn of one text (most answers) and of more, refused or not: one message item, whose parts are
    refusals for a refusal."""
    import dataclasses

    from sandbox.messages._types import Message, StopReason, Text
    from sandbox.wire.openai_responses import _encode

    body = {"model": "single_call", "input": "hi", "tools": [{"type": "function", "name": "get_weather"}]}
    exchange = Engine().handle("POST", "/v1/responses", json.dumps(body).encode())
    assert exchange.turn is not None
    parts = [Text(f'caf\u00e9 "{index}"') for index in range(texts)]
    reason = StopReason.REFUSAL if stop == "refusal" else StopReason.END_TURN
    turn = dataclasses.replace(exchange.turn, message=Message("assistant", parts), stop_reason=reason)
    items = _encode._output_items(turn)
    assert [item["type"] for item in items] == ["message"]
    kinds = [part["type"] for part in items[0]["content"]]
    assert kinds == ["refusal" if stop == "refusal" else "output_text"] * texts
