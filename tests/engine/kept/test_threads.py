"""An Anthropic `thread: continue` costs what is new, not what its thread holds, and answers exactly as
the whole thread walked again would (`sandbox/wire/anthropic/_thread.py`, `sandbox/engine/kept/_chain.py`)."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

import sandbox
from sandbox.wire._base import stable_token
from tests.engine.kept.test_chains import _answer_into, _calls_of, _twins

MESSAGES = "/v1/messages"
THINKING = {"type": "enabled", "budget_tokens": 1024}


def _tools(scenario: str) -> list[dict[str, Any]]:
    return [
        {"name": tool.name, "description": tool.description, "input_schema": dict(tool.parameters)}
        for tool in sandbox.get_scenario(scenario).tools
    ]


def _post(engine: sandbox.Engine, body: dict[str, Any], key: str = "") -> tuple[int, Any]:
    headers = {"x-api-key": key} if key else {}
    exchange = engine.handle("POST", MESSAGES, json.dumps(body).encode(), headers=headers)
    text = exchange.body.decode()
    return exchange.status, (json.loads(text) if exchange.status != 200 or not body.get("stream") else text)


def _results_for(answer: dict[str, Any], text: str = "18C") -> list[dict[str, Any]]:
    calls = [block for block in answer["content"] if block["type"] == "tool_use"]
    return [{"type": "tool_result", "tool_use_id": call["id"], "content": text} for call in calls]


def _continuation(scenario: str, answer: dict[str, Any], *, thinking: bool) -> dict[str, Any]:
    return {
        "model": scenario,
        "max_tokens": 2048,
        "messages": [{"role": "user", "content": _results_for(answer)}],
        "thread": {"type": "continue", "previous_message_id": answer["id"]},
        **({"thinking": THINKING} if thinking else {}),
    }


def _thread(engine: sandbox.Engine, scenario: str, depth: int, *, thinking: bool = False) -> list[dict[str, Any]]:
    """The answers of a thread `depth` continuations long (each sends only the calls' results)."""
    create = {
        "model": scenario,
        "max_tokens": 2048,
        "system": "You are terse.",
        "tools": _tools(scenario),
        "messages": [{"role": "user", "content": "Weather?"}],
        "thread": {"type": "create"},
        **({"thinking": THINKING} if thinking else {}),
    }
    status, answer = _post(engine, create)
    answers = [answer]
    for _ in range(depth):
        assert status == 200, answer
        status, answer = _post(engine, _continuation(scenario, answer, thinking=thinking))
        answers.append(answer)
    assert status == 200, answer
    return answers


Change = Callable[[list[dict[str, Any]], dict[str, Any]], dict[str, Any]]


def _continue_with(change: Change, scenario: str, *, thinking: bool = False, depth: int = 3) -> None:
    """The same thread in both engines, then the continuation `change` makes of (the thread's answers, a
    well-formed continuation), then a well-formed continuation of what that left (the snapshot it
    left, or the same turn again after an error): the same status and body from both."""
    seen = []
    for engine in _twins():
        chain = _thread(engine, scenario, depth, thinking=thinking)
        entry = engine.kept.store.get(chain[-1]["id"])
        assert entry is not None and (entry.snapshot is not None) == (engine.kept.store.max_snapshot_bytes > 0)
        body = _continuation(scenario, chain[-1], thinking=thinking)
        status, answer = _post(engine, change(chain, body))
        after = answer if status == 200 and isinstance(answer, dict) else chain[-1]
        follow = _post(engine, _continuation(scenario, after, thinking=thinking)) if after.get("content") else None
        seen.append((status, answer, follow))
    assert seen[0] == seen[1], seen


def _with_messages(*messages: dict[str, Any]) -> Change:
    return lambda chain, body: {**body, "messages": [*body["messages"], *messages]}


def _results(chain: list[dict[str, Any]], body: dict[str, Any]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = body["messages"][0]["content"]
    return content


CHANGES: dict[str, Change] = {
    "well formed": lambda chain, body: body,
    "a second result for the call": lambda chain, body: {
        **body,
        "messages": [{"role": "user", "content": _results(chain, body) * 2}],
    },
    "a result for a call the thread answered": lambda chain, body: {
        **body,
        "messages": [{"role": "user", "content": [*_results(chain, body), *_results_for(chain[0])]}],
    },
    "a result for no call": lambda chain, body: {
        **body,
        "messages": [
            {
                "role": "user",
                "content": [*_results(chain, body), {"type": "tool_result", "tool_use_id": "toolu_no", "content": "x"}],
            }
        ],
    },
    "no result for the call": lambda chain, body: {**body, "messages": [{"role": "user", "content": "and?"}]},
    "text before the results": lambda chain, body: {
        **body,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "here"}, *_results(chain, body)]}],
    },
    "text after the results": lambda chain, body: {
        **body,
        "messages": [{"role": "user", "content": [*_results(chain, body), {"type": "text", "text": "go on"}]}],
    },
    "results in a second user message": lambda chain, body: {
        **body,
        "messages": [{"role": "user", "content": "first"}, *body["messages"]],
    },
    "no messages": lambda chain, body: {**body, "messages": []},
    "messages not a list": lambda chain, body: {**body, "messages": "hello"},
    "an assistant message first": lambda chain, body: {
        **body,
        "messages": [{"role": "assistant", "content": "I add this."}, *body["messages"]],
    },
    "the answer echoed again": lambda chain, body: {
        **body,
        "messages": [{"role": "assistant", "content": chain[-1]["content"]}, *body["messages"]],
    },
    "the answer edited and echoed": lambda chain, body: {
        **body,
        "messages": [
            {
                "role": "assistant",
                "content": [
                    {**block, "input": {"city": "Lyon"}} if block["type"] == "tool_use" else block
                    for block in chain[-1]["content"]
                ],
            },
            *body["messages"],
        ],
    },
    "an earlier turn's result edited and sent again": lambda chain, body: {
        **body,
        "messages": [{"role": "user", "content": [*_results(chain, body), *_results_for(chain[-2], "20C")]}],
    },
    "the answer echoed again after the results": _with_messages(
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_x", "name": "get_weather", "input": {}}]}
    ),
    "an empty text block": lambda chain, body: {
        **body,
        "messages": [{"role": "user", "content": [*_results(chain, body), {"type": "text", "text": ""}]}],
    },
    "an empty final assistant message": _with_messages({"role": "assistant", "content": ""}),
    "a final assistant prefill": _with_messages({"role": "assistant", "content": "Sure:"}),
    "an empty user message": lambda chain, body: {**body, "messages": [{"role": "user", "content": []}]},
    "a system message between": lambda chain, body: {
        **body,
        "messages": [{"role": "system", "content": "be nice"}, *body["messages"]],
    },
    "thinking enabled": lambda chain, body: {**body, "thinking": THINKING},
    "another scenario": lambda chain, body: {**body, "model": "single_call"},
    "an unknown field": lambda chain, body: {**body, "temperature_x": 1},
    "no max_tokens": lambda chain, body: {key: value for key, value in body.items() if key != "max_tokens"},
    "a bad block": lambda chain, body: {**body, "messages": [{"role": "user", "content": [{"type": "wizard"}]}]},
    "a bad role": lambda chain, body: {**body, "messages": [{"role": "wizard", "content": "hi"}]},
    "a tool_use in a user message": lambda chain, body: {
        **body,
        "messages": [
            {
                "role": "user",
                "content": [
                    *_results(chain, body),
                    {"type": "tool_use", "id": "toolu_u", "name": "get_weather", "input": {}},
                ],
            }
        ],
    },
    "an error result": lambda chain, body: {
        **body,
        "messages": [{"role": "user", "content": [{**_results(chain, body)[0], "is_error": True}]}],
    },
    "a lone surrogate": lambda chain, body: {
        **body,
        "messages": [{"role": "user", "content": [{**_results(chain, body)[0], "content": "\ud800"}]}],
    },
    "a number past a float": lambda chain, body: {**body, "metadata": {"user_id": "u", "x": 1e400}},
    "Infinity in a result's text": lambda chain, body: {
        **body,
        "messages": [{"role": "user", "content": [{**_results(chain, body)[0], "content": "Infinity NaN"}]}],
    },
    "the same system": lambda chain, body: {**body, "system": "You are terse."},
    "another system": lambda chain, body: {**body, "system": "You are chatty."},
    "context management": lambda chain, body: {**body, "context_management": {"edits": []}},
    "streamed": lambda chain, body: {**body, "stream": True},
    "an unknown previous message": lambda chain, body: {
        **body,
        "thread": {"type": "continue", "previous_message_id": "msg_nope"},
    },
    "an older turn of the thread": lambda chain, body: {
        **body,
        "thread": {"type": "continue", "previous_message_id": chain[1]["id"]},
    },
}


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_a_thread_continuation_from_its_snapshot_answers_as_the_whole_thread_walked_again(change: str) -> None:
    _continue_with(CHANGES[change], "runaway")


@pytest.mark.parametrize(
    "change", ["well formed", "the answer echoed again", "an assistant message first", "a final assistant prefill"]
)
def test_a_parallel_thread_from_its_snapshot_answers_as_the_whole_thread_walked_again(change: str) -> None:
    _continue_with(CHANGES[change], "parallel_rounds", depth=1)


def _without_thinking(chain: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key != "thinking"}


def _forged_signature(chain: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
    content = [
        {**block, "signature": block["signature"][:-4] + "AAAA"} if block["type"] == "thinking" else block
        for block in chain[-1]["content"]
    ]
    return {**body, "messages": [{"role": "assistant", "content": content}, *body["messages"]]}


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("well formed", CHANGES["well formed"]),
        ("the answer echoed again", CHANGES["the answer echoed again"]),
        ("thinking disabled", _without_thinking),
        ("a forged signature", _forged_signature),
        ("an assistant message first", CHANGES["an assistant message first"]),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_a_thinking_thread_from_its_snapshot_answers_as_the_whole_walk(name: str, change: Change) -> None:
    _continue_with(change, "runaway_reasoning", thinking=True)
    _continue_with(change, "multi_step_reasoning", thinking=True)


def test_a_thread_continuation_costs_the_same_calls_at_depth_120_as_at_depth_5() -> None:
    """One continuation at the end of a thread 5 long and one 120 long make exactly the same function
    calls, where walking the whole thread again made many times as many at depth 120."""
    counts = []
    for depth in (5, 120):
        stable_token.cache_clear()
        engine = sandbox.Engine(budget=200)
        answer = _thread(engine, "runaway", depth)[-1]
        request = json.dumps(_continuation("runaway", answer, thinking=False)).encode()
        exchanges: list[sandbox.Exchange] = []
        counts.append(_calls_of(functools.partial(_answer_into, exchanges, engine, request, MESSAGES)))
        assert exchanges[0].status == 200, exchanges[0].body
    assert counts[0] == counts[1], counts


def test_another_senders_continuation_is_refused_with_or_without_the_snapshot() -> None:
    seen = []
    for engine in _twins():
        chain = _thread(engine, "runaway", 3)
        body = _continuation("runaway", chain[-1], thinking=False)
        seen.append((_post(engine, body, key="sk-other"), _post(engine, body)))
    assert seen[0] == seen[1], seen
    (refused, _), (answered, _) = seen[0]
    assert refused == 404 and answered == 200


def test_a_thread_that_lost_an_older_turn_is_refused_with_or_without_its_snapshot() -> None:
    seen = []
    for engine in _twins():
        chain = _thread(engine, "runaway", 3)
        assert engine.kept.store.remove(chain[0]["id"], "")
        seen.append(_post(engine, _continuation("runaway", chain[-1], thinking=False)))
    assert seen[0] == seen[1] and seen[0][0] == 404, seen
    assert seen[0][1]["error"]["details"]["error_code"] == "thread_not_found"


def test_racing_continuations_of_a_snapshot_answer_once() -> None:
    """Two continuations of one turn at once, ten times over: exactly one is answered, the other is
    refused as in flight or already continued, and the thread goes on from the one answered."""
    engine = sandbox.Engine(budget=200)
    answer = _thread(engine, "runaway", 2)[-1]
    for _ in range(10):
        body = json.dumps(_continuation("runaway", answer, thinking=False)).encode()
        gate = threading.Barrier(2)
        exchanges: list[sandbox.Exchange] = []

        workers = [threading.Thread(target=_send, args=(engine, body, gate, exchanges)) for _ in range(2)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        statuses = sorted(exchange.status for exchange in exchanges)
        assert statuses == [200, 400], [exchange.body for exchange in exchanges]
        refused = json.loads(next(exchange.body for exchange in exchanges if exchange.status == 400))
        assert refused["error"]["details"]["error_code"] in ("thread_continue_in_flight", "thread_already_continued")
        answer = json.loads(next(exchange.body for exchange in exchanges if exchange.status == 200))


def _send(engine: sandbox.Engine, body: bytes, gate: threading.Barrier, exchanges: list[sandbox.Exchange]) -> None:
    gate.wait()
    exchanges.append(engine.handle("POST", MESSAGES, body))


def test_a_thread_snapshot_counts_against_the_bound_and_is_let_go_past_its_share() -> None:
    """Each thread's newest turn holds a snapshot, counted in what the store holds; past the
    snapshots' share of the bound the oldest are let go, and a thread without one still continues,
    answering as the twin that keeps none."""
    seen = []
    for engine in _twins(kept_mib=1):
        store = engine.kept.store
        newest = []
        for _ in range(40):
            answers = _thread(engine, "runaway", 4)
            entry = store.get(answers[-1]["id"])
            assert entry is not None and (entry.snapshot is not None) == (store.max_snapshot_bytes > 0)
            assert store.held <= store.max_bytes
            newest.append(answers[-1])
        oldest = store.get(newest[0]["id"])
        seen.append([_post(engine, _continuation("runaway", answer, thinking=False)) for answer in newest[::13]])
        if store.max_snapshot_bytes:
            assert oldest is not None and oldest.snapshot is None  # let go past the share
    assert seen[0] == seen[1]
