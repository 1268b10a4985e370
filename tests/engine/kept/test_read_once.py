"""A Responses request is decoded once on its way through kept state (`KeptState.expand` reads it,
`KeptState.parse` walks what it read), and what `expand` decides from the decoded fields is what it
decided from the body's bytes: `store: false` keeps nothing, a `previous_response_id` continues."""

from __future__ import annotations

import json
from typing import Any

import pytest

import sandbox.engine.kept as kept
from sandbox import Engine

RESPONSES = "/v1/responses"
_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}

pytestmark = pytest.mark.usefixtures("kept_store")  # each test once per backend (tests/stores.py)


def _body(**extra: Any) -> bytes:
    return json.dumps({"model": "single_call", "input": "Weather in Paris?", "tools": [_TOOL], **extra}).encode()


def test_a_fresh_request_is_decoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bytes] = []
    decode = kept.json_object

    def counted(body: bytes) -> Any:
        calls.append(body)
        return decode(body)

    monkeypatch.setattr(kept, "json_object", counted)
    engine = Engine()
    answer = engine.handle("POST", RESPONSES, _body())
    assert answer.status == 200 and len(engine.kept) == 1
    assert len(calls) == 1


@pytest.mark.parametrize(("extra", "stored"), [({}, 1), ({"store": True}, 1), ({"store": False}, 0)])
def test_what_is_stored_follows_the_request_s_store(extra: dict[str, Any], stored: int) -> None:
    engine = Engine()
    answer = engine.handle("POST", RESPONSES, _body(**extra))
    assert answer.status == 200 and len(engine.kept) == stored


def test_each_request_is_walked_from_its_own_fields() -> None:
    """Two senders' different requests, in turn: each answer echoes its own request's fields."""
    engine = Engine()
    first = json.loads(engine.handle("POST", RESPONSES, _body(max_output_tokens=100)).body)
    second = json.loads(engine.handle("POST", RESPONSES, _body(max_output_tokens=200), client="b").body)
    assert (first["max_output_tokens"], second["max_output_tokens"]) == (100, 200)
    calls = [item for item in first["output"] if item["type"] == "function_call"]
    outputs = [{"type": "function_call_output", "call_id": call["call_id"], "output": "18C"} for call in calls]
    body = {"model": "single_call", "previous_response_id": first["id"], "input": outputs, "tools": [_TOOL]}
    continued = engine.handle("POST", RESPONSES, json.dumps(body).encode())
    assert continued.status == 200 and json.loads(continued.body)["previous_response_id"] == first["id"]
