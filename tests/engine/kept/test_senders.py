"""Kept state belongs to one sender and one answer: two learners sending the same first request each
get a thread (a stored response) of their own; a continuation is atomic; a forgotten id says why.

Were ids derived from the request bytes alone, two learners' equal `thread: create` requests would
get the same `msg_` id: A's continuation 200, B's 400 `thread_already_continued`.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest

import sandbox
from sandbox.engine.kept import KeptState
from tests.loopback import serving

pytestmark = pytest.mark.usefixtures("kept_store")  # each test once per backend (tests/stores.py)

WEATHER = {"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}
RESPONSES_WEATHER = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": False}
CREATE = {
    "model": "single_call",
    "max_tokens": 64,
    "tools": [WEATHER],
    "messages": [{"role": "user", "content": "What's the weather in Paris?"}],
    "thread": {"type": "create"},
}
HEADERS = {"anthropic-version": "2023-06-01", "content-type": "application/json"}


def _continue(answer: dict[str, Any]) -> dict[str, Any]:
    call = next(block for block in answer["content"] if block["type"] == "tool_use")
    result = {"type": "tool_result", "tool_use_id": call["id"], "content": "18C, clear"}
    return {
        "model": "single_call",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": [result]}],
        "thread": {"type": "continue", "previous_message_id": answer["id"]},
    }


def _responses_continue(answer: dict[str, Any]) -> dict[str, Any]:
    call = next(item for item in answer["output"] if item["type"] == "function_call")
    return {
        "model": "single_call",
        "previous_response_id": answer["id"],
        "tools": [RESPONSES_WEATHER],
        "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "18C, clear"}],
    }


def _post(engine: sandbox.Engine, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    exchange = engine.handle("POST", path, json.dumps(body).encode())
    return exchange.status, json.loads(exchange.body)


def test_two_senders_of_the_same_thread_create_each_continue_their_own_thread() -> None:
    engine = sandbox.Engine()
    first_a, first_b = (_post(engine, "/v1/messages", CREATE)[1] for _ in range(2))
    assert first_a["id"] != first_b["id"], "one answer, one id: never shared because two requests were equal"
    for first in (first_b, first_a):
        status, answer = _post(engine, "/v1/messages", _continue(first))
        assert status == 200, answer
        assert answer["content"][0]["text"] == 'The weather in Paris: "18C, clear".'


def test_two_senders_of_the_same_stored_response_each_continue_their_own() -> None:
    engine = sandbox.Engine()
    create = {"model": "single_call", "input": "What's the weather in Paris?", "tools": [RESPONSES_WEATHER]}
    first_a, first_b = (_post(engine, "/v1/responses", create)[1] for _ in range(2))
    assert first_a["id"] != first_b["id"]
    for first in (first_a, first_b):
        status, answer = _post(engine, "/v1/responses", _responses_continue(first))
        assert status == 200, answer
        assert answer["previous_response_id"] == first["id"]


@pytest.mark.memory_store
def test_a_fresh_engine_issues_the_same_ids_for_the_same_requests_in_the_same_order() -> None:
    """The determinism promise (docs/agents/scenarios.md): ids carry the engine's number for each request."""

    def run() -> list[str]:
        engine = sandbox.Engine()
        first = _post(engine, "/v1/messages", CREATE)[1]
        again = _post(engine, "/v1/messages", CREATE)[1]
        return [first["id"], again["id"], _post(engine, "/v1/messages", _continue(first))[1]["id"]]

    ids = run()
    assert run() == ids and len(set(ids)) == 3


def test_call_ids_and_signatures_stay_recomputable_from_the_step() -> None:
    """Only the ids that name an answer change per answer: the calls the replay checks do not."""
    engine = sandbox.Engine()
    blocks = [_post(engine, "/v1/messages", CREATE)[1]["content"] for _ in range(2)]
    assert blocks[0] == blocks[1]


def test_over_http_another_api_key_cannot_continue_a_thread() -> None:
    """A real provider scopes kept state to the key that made it; in a room, the key is the learner."""
    with serving(sandbox.Engine()) as base, httpx.Client(base_url=base) as http:
        first = http.post("/v1/messages", json=CREATE, headers={**HEADERS, "x-api-key": "learner-a"}).json()
        other = http.post("/v1/messages", json=_continue(first), headers={**HEADERS, "x-api-key": "learner-b"})
        own = http.post("/v1/messages", json=_continue(first), headers={**HEADERS, "x-api-key": "learner-a"})
    assert other.status_code == 404 and other.json()["error"]["details"]["error_code"] == "thread_not_found"
    assert own.status_code == 200, own.text


def test_racing_continuations_of_one_thread_answer_exactly_one() -> None:
    """The check and the mark are one step: of two continuations racing, one is answered and the
    other refused (`thread_continue_in_flight` while the first is answered, or `thread_already_continued`
    after), in every pair."""
    engine = sandbox.Engine()
    for _ in range(20):
        first = _post(engine, "/v1/messages", CREATE)[1]
        body = json.dumps(_continue(first)).encode()
        start = threading.Barrier(2)
        outcomes: list[tuple[int, str | None]] = []

        def go(
            body: bytes = body, start: threading.Barrier = start, outcomes: list[tuple[int, str | None]] = outcomes
        ) -> None:
            start.wait(timeout=10)
            exchange = engine.handle("POST", "/v1/messages", body)
            data = json.loads(exchange.body)
            outcomes.append((exchange.status, data.get("error", {}).get("details", {}).get("error_code")))

        pair = [threading.Thread(target=go) for _ in range(2)]
        for thread in pair:
            thread.start()
        for thread in pair:
            thread.join(timeout=30)
        assert sorted(status for status, _ in outcomes) == [200, 400], outcomes
        assert {code for _, code in outcomes} - {None} <= {"thread_continue_in_flight", "thread_already_continued"}


def test_a_continuation_in_flight_is_refused_with_the_sdk_error_code() -> None:
    """`thread_continue_in_flight`: the anthropic SDK (`lib/threads/_thread_state.py`, `ReplayErrorCode`)
    replays the whole history under a new thread on it, as on `thread_not_found`."""
    import anthropic
    import httpx2

    transport = sandbox.httpx2_transport()
    kept = transport.engine.kept
    with anthropic.Anthropic(api_key="k", max_retries=0, http_client=httpx2.Client(transport=transport)) as client:  # type: ignore[arg-type]
        first = client.beta.messages.create(**CREATE).model_dump()
        owner = _owner("k")
        claim = kept.store.claim(first["id"], owner, once=True)  # a continuation being answered right now
        assert not isinstance(claim, str), claim
        with pytest.raises(anthropic.BadRequestError) as info:
            client.beta.messages.create(**_continue(first))
        assert info.value.error_code == "thread_continue_in_flight"
        assert isinstance(info.value, anthropic.types.ThreadContinueInFlightError)
        kept.store.release(claim)
        again = client.beta.messages.create(**_continue(first))
    assert again.content[0].text == 'The weather in Paris: "18C, clear".', "a failed or finished claim is given back"


def _owner(key: str) -> str:
    from sandbox.engine._senders import owner_key

    return owner_key({"x-api-key": key})


def test_a_failed_continuation_gives_the_turn_back() -> None:
    engine = sandbox.Engine()
    first = _post(engine, "/v1/messages", CREATE)[1]
    wrong = _continue(first)
    wrong["messages"][0]["content"][0]["tool_use_id"] = "toolu_01nothing"
    assert _post(engine, "/v1/messages", wrong)[0] == 400
    assert _post(engine, "/v1/messages", _continue(first))[0] == 200


def test_a_thread_with_context_management_is_unsupported_with_the_sdk_error_code() -> None:
    import anthropic
    import httpx2

    body = {**CREATE, "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}}
    transport = sandbox.httpx2_transport()
    with anthropic.Anthropic(api_key="k", max_retries=0, http_client=httpx2.Client(transport=transport)) as client:  # type: ignore[arg-type]
        with pytest.raises(anthropic.BadRequestError) as info:
            client.beta.messages.create(**body)
    assert isinstance(info.value, anthropic.types.ThreadUnsupportedRequestError)
    assert info.value.body["error"]["details"] == {  # type: ignore[index]
        "error_code": "thread_unsupported_request",
        "unsupported": ["context_management"],
    }


def test_an_evicted_response_names_the_bound_the_option_and_what_to_do() -> None:
    engine = sandbox.Engine(kept=3)
    create = {"model": "single_call", "input": "What's the weather in Paris?", "tools": [RESPONSES_WEATHER]}
    first = _post(engine, "/v1/responses", create)[1]
    for index in range(3):
        _post(engine, "/v1/responses", {"model": "plain_text", "input": f"hi {index}"})
    status, answer = _post(engine, "/v1/responses", _responses_continue(first))
    assert status == 400 and answer["error"]["code"] == "previous_response_not_found"
    message = answer["error"]["message"]
    assert message.startswith(f"Previous response with id '{first['id']}' not found.\n\nsandbox: "), message
    assert "forgotten to make room" in message and "at most 3 stored responses" in message
    assert "--kept N" in message and "sandbox.Engine(kept=N" in message
    assert "send the whole conversation in `input`" in message


def test_an_evicted_thread_names_the_bound_and_keeps_the_sdk_error_code() -> None:
    engine = sandbox.Engine(kept=1)
    first = _post(engine, "/v1/messages", CREATE)[1]
    _post(engine, "/v1/messages", {**CREATE, "messages": [{"role": "user", "content": "Weather?"}]})
    status, answer = _post(engine, "/v1/messages", _continue(first))
    assert status == 404 and answer["error"]["details"] == {"error_code": "thread_not_found"}
    message = answer["error"]["message"]
    assert message.startswith(f"No usable Thread state was found for previous_message_id {first['id']!r}.")
    assert "at most 1 stored responses" in message and "--kept-mib M" in message


@pytest.mark.slow
def test_kept_state_counts_what_it_holds_and_stays_within_its_byte_bound() -> None:
    """600 stored responses of 4,000 short messages each once took 575 MB against a 64 MiB bound: the
    store held parsed objects. It holds bytes now, and its count is what it holds (tracemalloc)."""
    import tracemalloc

    engine = sandbox.Engine(kept_mib=1)
    messages = [{"role": "user", "content": f"note {index}"} for index in range(400)]
    body = json.dumps({"model": "plain_text", "input": messages}).encode()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(100):
            assert engine.handle("POST", "/v1/responses", body).status == 200
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    kept = engine.kept.store
    assert kept.evictions > 0 and kept.held <= kept.max_bytes
    assert held < 1.5 * kept.max_bytes, f"{held} bytes held for a bound of {kept.max_bytes}"


def test_a_chain_keeps_each_turn_once() -> None:
    """Each stored turn holds what it added, not the whole history again: a chain's bytes grow with
    its length, not with its square."""
    kept = KeptState()
    engine = sandbox.Engine(budget=200)
    engine.kept = kept
    tools = [RESPONSES_WEATHER]
    answer = _post(engine, "/v1/responses", {"model": "runaway", "input": "Weather?", "tools": tools})[1]
    sizes = []
    for _ in range(60):
        call = next(item for item in answer["output"] if item["type"] == "function_call")
        body = {
            "model": "runaway",
            "previous_response_id": answer["id"],
            "tools": tools,
            "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "18C"}],
        }
        status, answer = _post(engine, "/v1/responses", body)
        assert status == 200, answer
        sizes.append(kept.store.held)
    growth = [later - earlier for earlier, later in zip(sizes, sizes[1:], strict=False)]
    assert max(growth) < 2 * min(growth), growth


@pytest.mark.parametrize(
    "body",
    [
        {"model": "single_call", "previous_response_id": "resp_1", "input": []},
        {"model": "single_call", "max_tokens": 9, "messages": [], "thread": {"type": "continue"}},
        {"model": "single_call", "conversation": "conv_1", "input": "hi"},
    ],
    ids=["previous_response_id", "thread", "conversation"],
)
def test_a_continuation_is_answered_off_the_servers_event_loop(body: dict[str, Any]) -> None:
    """Its history is a stored chain's, however small its own body: on the loop, a deep chain once
    held another client for 1.7 s."""
    engine = sandbox.Engine()
    path = "/v1/messages" if "thread" in body else "/v1/responses"
    assert not engine.runs_inline(path, json.dumps(body).encode(), 64 * 1024)
    assert not engine.runs_inline("/openai/v1/responses", json.dumps(body).encode(), 64 * 1024), "a cloud's path"
    assert engine.runs_inline(path, json.dumps({"model": "single_call", "input": "hi"}).encode(), 64 * 1024)


def test_racing_continuations_of_one_stored_response_are_all_answered() -> None:
    """Unlike a thread turn, a stored response may be continued any number of times, at once too."""
    engine = sandbox.Engine()
    create = {"model": "single_call", "input": "What's the weather in Paris?", "tools": [RESPONSES_WEATHER]}
    first = _post(engine, "/v1/responses", create)[1]
    body = json.dumps(_responses_continue(first)).encode()
    start = threading.Barrier(4)
    statuses: list[int] = []

    def go() -> None:
        start.wait(timeout=10)
        statuses.append(engine.handle("POST", "/v1/responses", body).status)

    racers = [threading.Thread(target=go) for _ in range(4)]
    for thread in racers:
        thread.start()
    for thread in racers:
        thread.join(timeout=30)
    assert statuses == [200] * 4
    held = engine.kept.store.claim(first["id"], "", once=False)  # one being answered right now
    assert not isinstance(held, str)
    assert engine.handle("POST", "/v1/responses", body).status == 200


def test_the_sdk_thread_helper_continues_unthreaded_on_an_unsupported_request() -> None:
    """`unsupported_request_behavior="continue_unthreaded"`: the SDK (`lib/threads/_thread_state.py`,
    `recovers_from`) resends the turn, and every later one, with the full history and no `thread`."""
    import anthropic
    import httpx2
    from anthropic import beta_tool

    from tests.frameworks._tools import scenario_functions

    transport = sandbox.httpx2_transport()
    scenario = sandbox.get_scenario("multi_step")
    with anthropic.Anthropic(api_key="k", max_retries=0, http_client=httpx2.Client(transport=transport)) as client:  # type: ignore[arg-type]
        thread = client.beta.messages.thread(
            model="multi_step",
            max_tokens=256,
            tools=[beta_tool(function) for function in scenario_functions("multi_step")],
            messages=[{"role": "user", "content": scenario.prompt}],
            context_management={"edits": [{"type": "clear_tool_uses_20250919"}]},
            unsupported_request_behavior="continue_unthreaded",
        )
        final = thread.tool_runner().until_done()
    assert "confirmed, ref LB-2041" in final.content[-1].text
    statuses = [exchange.status for exchange in transport.journal]
    assert statuses[0] == 400 and set(statuses[1:]) == {200}
    assert all(b'"thread"' not in exchange.request_body for exchange in list(transport.journal)[1:])
