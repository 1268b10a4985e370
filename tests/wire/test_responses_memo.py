"""The Responses answer's memos (`sandbox/wire/openai_responses/_memo.py`): what many answers share is
written once, and nothing that names one answer ever reaches another's; each memo stays within its
bounds and never keeps a huge answer."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from sandbox import Engine
from sandbox.messages._types import wire_message, wire_text
from sandbox.wire._memo import Memo
from sandbox.wire.openai_responses import _stream

RESPONSES = "/v1/responses"
_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def _second_request(stream: bool, **extra: Any) -> bytes:
    """`single_call`'s second request (the call and its output), as the serve rows send it."""
    first = Engine().handle("POST", RESPONSES, json.dumps(_first()).encode())
    answer = json.loads(first.body)
    calls = [item for item in answer["output"] if item["type"] == "function_call"]
    outputs = [{"type": "function_call_output", "call_id": call["call_id"], "output": "18C, clear"} for call in calls]
    body = {**_first(), "input": [*_first()["input"], *answer["output"], *outputs], "stream": stream, **extra}
    return json.dumps(body).encode()


def _first() -> dict[str, Any]:
    return {"model": "single_call", "input": [{"role": "user", "content": "Weather in Paris?"}], "tools": [_TOOL]}


def _events(chunks: tuple[bytes, ...]) -> list[dict[str, Any]]:
    return [json.loads(chunk.split(b"data: ", 1)[1]) for chunk in chunks]


def test_two_senders_of_one_step_share_the_item_frames_and_never_an_id() -> None:
    """The second stream of a step takes its item events from the memo (the very same bytes), while
    its response objects carry its own id: no frame of B's names A's response."""
    _stream._ITEM_FRAMES.cache_clear()
    engine = Engine()
    body = _second_request(stream=True)
    a = engine.handle("POST", RESPONSES, body, client="a")
    b = engine.handle("POST", RESPONSES, body, client="b")
    assert a.status == b.status == 200
    a_id, b_id = (_events(x.chunks)[0]["response"]["id"] for x in (a, b))
    assert a_id != b_id
    assert all(a_id.encode() not in chunk for chunk in b.chunks)
    assert _events(b.chunks)[-1]["response"]["id"] == b_id
    assert len(a.chunks) == len(b.chunks) > 4
    assert all(x is y for x, y in zip(a.chunks[2:-1], b.chunks[2:-1], strict=True))  # written once
    assert [event["sequence_number"] for event in _events(b.chunks)] == list(range(len(b.chunks)))


def test_memoised_frames_are_the_frames_written_afresh() -> None:
    body = _second_request(stream=True)
    _stream._ITEM_FRAMES.cache_clear()
    fresh = Engine().handle("POST", RESPONSES, body).chunks
    assert _stream._ITEM_FRAMES.cache_info() == 1
    again = Engine().handle("POST", RESPONSES, body).chunks  # a fresh engine: the same ids, from the memo
    assert again == fresh


def test_obfuscation_off_is_its_own_key() -> None:
    """The same step with `include_obfuscation: false` after one with it gets no obfuscation."""
    _stream._ITEM_FRAMES.cache_clear()
    engine = Engine()
    with_it = engine.handle("POST", RESPONSES, _second_request(stream=True))
    off = _second_request(stream=True, stream_options={"include_obfuscation": False})
    without = engine.handle("POST", RESPONSES, off)
    deltas = [event for event in _events(with_it.chunks) if event["type"].endswith(".delta")]
    assert deltas and all("obfuscation" in event for event in deltas)
    assert all("obfuscation" not in event for event in _events(without.chunks))


def test_a_large_answer_is_not_memoised() -> None:
    """An answer whose items exceed the memo's largest entry is written for each stream and kept
    nowhere: the memo holds what it held before."""
    engine = Engine()
    exchange = engine.handle("POST", RESPONSES, _second_request(stream=True))
    assert exchange.turn is not None and exchange.conversation is not None
    big = wire_message("assistant", [wire_text("word " * (_stream._ITEM_FRAMES.largest // 4))])
    turn = dataclasses.replace(exchange.turn, message=big)
    _stream._ITEM_FRAMES.cache_clear()
    frames, kept = _stream.stream_answer(turn, exchange.conversation)
    assert len(b"".join(frames)) > _stream._ITEM_FRAMES.largest
    assert _stream._ITEM_FRAMES.cache_info() == 0 and _stream._ITEM_FRAMES.held == 0
    assert kept["output"][0]["content"][0]["text"] == big.content[0].text  # type: ignore[union-attr]


def test_memo_keeps_within_its_entries_and_bytes() -> None:
    memo: Memo[bytes] = Memo(entries=3, max_bytes=100, largest=60)
    for index in range(10):
        memo.put(index, b"x", 10)
        assert memo.cache_info() <= 3 and memo.held <= 100
    assert memo.get(9) == b"x" and memo.get(0) is None  # the oldest went first
    memo.put("big", b"y", 61)
    assert memo.get("big") is None  # above `largest`: never kept
    for index in range(10):
        memo.put(("wide", index), b"z", 45)
        assert memo.held <= 100
    assert memo.cache_info() == 2
    memo.cache_clear()
    assert memo.cache_info() == 0 and memo.held == 0


def test_memo_keeps_the_recently_used() -> None:
    memo: Memo[str] = Memo(entries=2, max_bytes=1_000, largest=1_000)
    memo.put("a", "A", 1)
    memo.put("b", "B", 1)
    assert memo.get("a") == "A"  # now the newest
    memo.put("c", "C", 1)
    assert memo.get("b") is None and memo.get("a") == "A" and memo.get("c") == "C"
    memo.put("c", "C2", 5)  # replaced: counted once
    assert memo.held == 6 and memo.get("c") == "C2"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_answers_of_one_step_differ_only_in_their_ids(stream: bool) -> None:
    """Two senders' answers to the same request, with every id that names an answer taken out, are
    the same bytes (the README's determinism promise), memo or not."""
    engine = Engine()
    body = _second_request(stream=stream)
    a, b = (engine.handle("POST", RESPONSES, body, client=who) for who in "ab")
    a_id, b_id = (json.loads(x.body)["id"] if not stream else _events(x.chunks)[0]["response"]["id"] for x in (a, b))
    assert a_id != b_id
    assert b"".join(a.chunks).replace(a_id.encode(), b"ID") == b"".join(b.chunks).replace(b_id.encode(), b"ID")


def test_echoed_fields_are_keyed_by_their_json_text() -> None:
    """`temperature: 1` and `1.0` (and `true` against `1` elsewhere) are equal Python keys and different
    echoes: each answer echoes its own request's text, in whichever order they come."""
    from sandbox.wire.openai_responses import _encode

    _encode._ECHOES.cache_clear()
    engine = Engine()
    echoed = []
    for temperature in (1, 1.0, 1, True):
        body = {**_first(), "temperature": temperature}
        exchange = engine.handle("POST", RESPONSES, json.dumps(body).encode())
        if temperature is True:
            assert exchange.status == 400  # a boolean is no number: refused before any echo
            continue
        echoed.append(json.loads(exchange.body)["temperature"])
        assert (b'"temperature":1,' if type(temperature) is int else b'"temperature":1.0,') in exchange.body
    assert [type(value) for value in echoed] == [int, float, int]
    assert _encode._ECHOES.cache_info() == 2


def test_a_continuation_s_echo_is_not_memoised() -> None:
    """A request naming stored state echoes that state's id: one sender's, never kept for others."""
    from sandbox.wire.openai_responses import _encode

    engine = Engine()
    first = json.loads(engine.handle("POST", RESPONSES, json.dumps(_first()).encode()).body)
    _encode._ECHOES.cache_clear()
    calls = [item for item in first["output"] if item["type"] == "function_call"]
    outputs = [{"type": "function_call_output", "call_id": call["call_id"], "output": "18C"} for call in calls]
    body = {"model": "single_call", "previous_response_id": first["id"], "input": outputs, "tools": [_TOOL]}
    answer = engine.handle("POST", RESPONSES, json.dumps(body).encode())
    assert answer.status == 200 and json.loads(answer.body)["previous_response_id"] == first["id"]
    assert _encode._ECHOES.cache_info() == 0
