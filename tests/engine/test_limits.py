"""What one request may cost: calls per turn and messages per request are bounded, the budget is
counted before the history is replayed, streamed answers stay proportional to the request, the
journal is bounded in bytes, and the repeat guard counts callers, not requests."""

from __future__ import annotations

import json
import threading

import pytest

import sandbox
from sandbox import Rule, skyl
from sandbox.adapters._transport import Journal
from sandbox.engine._engine import Exchange
from sandbox.engine._limits import MAX_CALLS_PER_TURN, MAX_ITEMS, MAX_MESSAGES
from sandbox.wire._base import MAX_FRAGMENTS
from tests.conftest import scenario_request

WEATHER = {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}


def _gemini_turn_with(calls: int) -> bytes:
    call = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
    response = {"functionResponse": {"name": "get_weather", "response": {"result": "18C"}}}
    return json.dumps(
        {
            "contents": [
                {"role": "user", "parts": [{"text": "hi"}]},
                {"role": "model", "parts": [call] * calls},
                {"role": "user", "parts": [response] * calls},
            ],
            "tools": [{"functionDeclarations": [WEATHER]}],
        }
    ).encode()


def _chat_history(turns: int) -> bytes:
    """`turns` assistant turns that the sandbox never sent (made-up ids), each with its result."""
    messages: list[dict[str, object]] = [{"role": "user", "content": "hi"}]
    for turn in range(turns):
        call = {"id": f"call_{turn}", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": "18C"})
    body = {"model": "single_call", "messages": messages, "tools": [{"type": "function", "function": WEATHER}]}
    return json.dumps(body).encode()


def test_a_turn_with_thousands_of_calls_is_refused_naming_the_limit() -> None:
    exchange = sandbox.Engine().handle("POST", "/v1beta/models/single_call:generateContent", _gemini_turn_with(2_000))
    assert exchange.status == 400
    assert exchange.error is not None and exchange.error.rule is Rule.TOO_LARGE
    message = json.loads(exchange.body)["error"]["message"]
    assert (
        f"contents[1] holds 2000 tool calls in one assistant turn; the sandbox accepts at most {MAX_CALLS_PER_TURN}"
        in message
    )


def test_a_request_with_too_many_messages_is_refused_naming_the_limit() -> None:
    exchange = sandbox.Engine().handle("POST", "/v1/chat/completions", _chat_history(MAX_MESSAGES // 2 + 1))
    assert exchange.status == 400
    assert f"the sandbox accepts at most {MAX_MESSAGES}" in json.loads(exchange.body)["error"]["message"]


def test_the_budget_is_counted_before_the_history_is_replayed() -> None:
    """A runaway history over the budget gets the budget error, not a replay of every turn: its
    made-up turns would otherwise be reported as a history mismatch, after walking all of them."""
    exchange = sandbox.Engine(budget=50).handle("POST", "/v1/chat/completions", _chat_history(200))
    assert exchange.error is not None and exchange.error.rule is Rule.BUDGET
    assert "used its budget of 50 model requests" in json.loads(exchange.body)["error"]["message"]


def test_a_streamed_answer_quoting_a_large_result_stays_proportional(provider: str) -> None:
    transport = sandbox.transport()
    client = skyl.Client(provider, transport=transport)
    request = scenario_request("single_call")
    first = client.complete(request)
    big = "0123456789abcdef" * 65_536  # 1 MiB of tool output, quoted in the answer
    request.messages += [first.message, skyl.tool_result_message(first.tool_calls()[0].id, big)]
    answer = skyl.collect_stream(client.stream(request))
    assert big in answer.text()
    exchange = transport.journal[-1]
    assert len(exchange.chunks) <= MAX_FRAGMENTS + 20
    # Responses repeats the whole text in its four `done` events, as the real API does: at most 6x.
    assert len(exchange.body) < 6 * len(exchange.request_body)


def _exchange(size: int) -> Exchange:
    return Exchange("POST", "/v1/messages", 200, {}, (b"{}",), b"x" * size)


def test_the_journal_is_bounded_in_bytes_and_counts_what_it_dropped() -> None:
    journal = Journal(maxlen=1000, max_bytes=10 * 1024 * 1024)
    for _ in range(30):
        journal.append(_exchange(1024 * 1024))
    assert len(journal) == 9 and journal.dropped == 21
    assert journal.bytes <= 10 * 1024 * 1024
    journal.append(_exchange(20 * 1024 * 1024))  # larger than the bound alone: the newest is kept
    assert len(journal) == 1 and journal.last is not None and len(journal.last.request_body) == 20 * 1024 * 1024


def test_a_transport_journal_has_a_byte_bound_by_default() -> None:
    assert sandbox.transport().journal.max_bytes == 64 * 1024 * 1024
    assert sandbox.transport(journal_bytes=None).journal.max_bytes is None


def test_sixty_four_threads_sending_the_same_first_request_are_not_a_loop() -> None:
    """One transport shared by a test suite's threads: the repeat guard counts each thread apart."""
    transport = sandbox.transport(budget=50)
    start = threading.Barrier(64)
    statuses: list[int] = []

    def one() -> None:
        client = skyl.Client("anthropic", transport=transport)
        start.wait(timeout=30)
        client.complete(scenario_request("single_call"))
        statuses.append(transport.journal.last.status if transport.journal.last else 0)

    pool = [threading.Thread(target=one) for _ in range(64)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=60)
    assert len(statuses) == 64 and len(transport.journal.errors()) == 0


def test_a_loop_that_resends_without_appending_is_still_stopped() -> None:
    client = skyl.Client("openai", transport=sandbox.transport(budget=5))
    request = scenario_request("single_call")
    for _ in range(5):
        client.complete(request)
    with pytest.raises(skyl.ProviderError, match="this exact request has arrived 6 times"):
        client.complete(request)


def test_sixty_clients_on_distinct_connections_are_not_a_loop() -> None:
    """The server keys the guard by connection (address and port): a room behind one NAT address."""
    engine = sandbox.Engine(budget=50)
    body = json.dumps(
        {"model": "plain_text", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    statuses = [engine.handle("POST", "/v1/messages", body, client=f"10.0.0.1:{40000 + n}").status for n in range(60)]
    assert statuses == [200] * 60


def test_a_request_of_many_tiny_parts_is_refused_before_it_is_parsed() -> None:
    """100,000 one-character blocks fit in 4 MiB and would cost seconds to validate one by one."""
    body = json.dumps(
        {
            "model": "plain_text",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}] * 100_000}],
        }
    ).encode()
    exchange = sandbox.Engine().handle("POST", "/v1/messages", body)
    assert exchange.status == 400
    assert (
        f"holds 100001 messages, content parts and tools; the sandbox accepts at most {MAX_ITEMS}"
        in (json.loads(exchange.body)["error"]["message"])
    )
