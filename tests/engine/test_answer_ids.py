"""The ids an answer issues for itself: shaped as each provider's, never shared by two answers, the
same from a fresh engine, and apart from the ids every conversation shares (call ids, item ids),
whose derivation scripts and learners' transcripts quote.
"""

from __future__ import annotations

import dataclasses
import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

import sandbox
from sandbox.engine._exchange import Exchange, answer_identity
from sandbox.wire._base import _ALPHANUMERIC, BASE58, HEX, stable_token, unique_token

WEATHER_CHAT = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
WEATHER_ANTHROPIC = {"name": "get_weather", "input_schema": {"type": "object"}}
WEATHER_RESPONSES = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": False}
B58 = "[1-9A-HJ-NP-Za-km-z]"
SHAPES = {  # path -> (body, the response id's shape, the request id header, its shape)
    "/v1/chat/completions": (
        {"model": "single_call", "tools": [WEATHER_CHAT], "messages": [{"role": "user", "content": "Paris?"}]},
        "chatcmpl-[A-Za-z0-9]{29}",
        "x-request-id",
        "req_[0-9a-f]{32}",
    ),
    "/v1/messages": (
        {
            "model": "single_call",
            "max_tokens": 64,
            "tools": [WEATHER_ANTHROPIC],
            "messages": [{"role": "user", "content": "Paris?"}],
        },
        f"msg_01{B58}{{22}}",
        "request-id",
        f"req_011C{B58}{{20}}",
    ),
    "/v1/responses": (
        {"model": "single_call", "tools": [WEATHER_RESPONSES], "input": "Paris?"},
        "resp_[0-9a-f]{48}",
        "x-request-id",
        "req_[0-9a-f]{32}",
    ),
}


def _ids(engine: sandbox.Engine, path: str, body: dict[str, object], client: str = "") -> tuple[str, str]:
    exchange = engine.handle("POST", path, json.dumps(body).encode(), client=client)
    assert exchange.status == 200, exchange.body
    return json.loads(exchange.body)["id"], exchange.headers[SHAPES[path][2]]


def test_answer_ids_have_each_providers_shape_and_no_two_answers_share_one() -> None:
    """The SDKs read these ids (`_request_id`, `response.id`) and kept state is found by them: 400
    answers to one request (40 senders, ten times each) are 400 ids of the provider's length and alphabet."""
    engine = sandbox.Engine()
    for path, (body, response_shape, _, request_shape) in SHAPES.items():
        answers = [_ids(engine, path, body, client=str(index % 40)) for index in range(400)]
        for response_id, request_id in answers:
            assert re.fullmatch(response_shape, response_id), response_id
            assert re.fullmatch(request_shape, request_id), request_id
        assert len({response_id for response_id, _ in answers}) == 400
        assert len({request_id for _, request_id in answers}) == 400


def test_engines_answering_different_first_requests_issue_different_ids() -> None:
    """The identity holds a checksum of the request beside the engine's number, so a server restarted
    mid-workshop does not hand a learner's stale `previous_response_id` to someone else's answer."""
    path, (body, *_) = "/v1/responses", SHAPES["/v1/responses"]
    first = _ids(sandbox.Engine(), path, body)
    other = _ids(sandbox.Engine(), path, {**body, "input": "Lyon?"})
    assert _ids(sandbox.Engine(), path, body) == first, "a fresh engine answers the same bytes"
    assert other[0] != first[0] and other[1] != first[1]


def test_the_identity_is_hex_and_unique_by_the_engines_number() -> None:
    """Hex, as `openai-processing-ms` and Gemini's `server-timing` read their plausible durations from
    it; the number follows eight checksum digits, so two numbers never write the same identity."""
    identities = {answer_identity(number, b"{}") for number in range(1, 5000)}
    assert len(identities) == 4999
    assert all(re.fullmatch("[0-9a-f]{9,}", identity) for identity in identities)


@settings(max_examples=300, deadline=None)
@given(seed=st.text(max_size=80), length=st.integers(1, 32), alphabet=st.sampled_from([_ALPHANUMERIC, BASE58, HEX]))
def test_unique_token_writes_exactly_length_characters_of_the_alphabet(seed: str, length: int, alphabet: str) -> None:
    token = unique_token(seed.encode("utf-8", "surrogatepass").decode("utf-8", "replace"), length, alphabet)
    assert len(token) == length and set(token) <= set(alphabet)


def test_ids_every_conversation_shares_keep_their_derivation() -> None:
    """Call ids are recomputed from the step to check an echo, and quoted by scripts and transcripts:
    the same bytes as every earlier release wrote them."""
    assert stable_token("call:single_call/0", 24) == "LxuKXP2v7PwqxX3e1WZGp21t"
    assert stable_token("toolu", 22, BASE58) == "dw38hQJkA3TQW4KX6xEVKx"


def test_the_answered_exchange_is_the_dataclass_with_every_field() -> None:
    """The engine builds a 200's `Exchange` from one dict of its fields: every field of the dataclass,
    so one added to `Exchange` and not there fails here rather than reading a class default."""
    engine = sandbox.Engine()
    body = SHAPES["/v1/chat/completions"][0]
    exchange = engine.handle("POST", "/v1/chat/completions", json.dumps(body).encode())
    assert set(vars(exchange)) == {field.name for field in dataclasses.fields(Exchange)}
    assert exchange == Exchange(**{field.name: getattr(exchange, field.name) for field in dataclasses.fields(Exchange)})
