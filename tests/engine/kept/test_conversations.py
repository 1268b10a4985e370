"""A Responses turn in a `conversation` costs what is new, not what the conversation holds, and answers
exactly as the whole conversation walked again would (`sandbox/engine/kept/_turns.py`)."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

import sandbox
from sandbox.engine.kept import _turns
from sandbox.engine.kept._chain import ContinuationState
from sandbox.wire._base import stable_token
from tests.engine.kept.test_chains import _answer_into, _calls_of, _outputs_for, _tools, _twins

RESPONSES = "/v1/responses"
CONVERSATIONS = "/v1/conversations"
FIRST = {"type": "message", "role": "user", "content": "Weather?", "id": "msg_first"}


def _post(engine: sandbox.Engine, path: str, body: dict[str, Any], key: str = "") -> tuple[int, Any]:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    exchange = engine.handle("POST", path, json.dumps(body).encode(), headers=headers)
    text = exchange.body.decode()
    return exchange.status, (json.loads(text) if exchange.status != 200 or not body.get("stream") else text)


def _turn(scenario: str, conversation: str, items: Any) -> dict[str, Any]:
    return {"model": scenario, "conversation": conversation, "tools": _tools(scenario), "input": items}


def _conversation(engine: sandbox.Engine, scenario: str, depth: int) -> tuple[str, list[dict[str, Any]]]:
    """A conversation and the answers of its `depth + 1` turns (each after the first sends only the
    calls' outputs)."""
    status, created = _post(engine, CONVERSATIONS, {"metadata": {"lesson": "1"}})
    assert status == 200, created
    key = created["id"]
    status, answer = _post(engine, RESPONSES, _turn(scenario, key, [FIRST]))
    answers = [answer]
    for _ in range(depth):
        assert status == 200, answer
        status, answer = _post(engine, RESPONSES, _turn(scenario, key, _outputs_for(answer)))
        answers.append(answer)
    assert status == 200, answer
    return key, answers


def _items(engine: sandbox.Engine, key: str) -> list[dict[str, Any]]:
    exchange = engine.handle("GET", f"{CONVERSATIONS}/{key}/items", b"", query="order=asc&limit=100")
    assert exchange.status == 200, exchange.body
    data: list[dict[str, Any]] = json.loads(exchange.body)["data"]
    return data


Change = Callable[[sandbox.Engine, str, list[dict[str, Any]], dict[str, Any]], dict[str, Any]]


def _continue_with(change: Change, scenario: str = "runaway") -> None:
    """The same conversation in both engines, then the turn `change` makes of (the engine, the
    conversation, its answers, a well-formed turn), then a well-formed turn after it: the same
    status and body from both, and the same items listed."""
    seen = []
    for engine in _twins():
        key, answers = _conversation(engine, scenario, 3)
        entry = engine.kept.store.get(key)
        assert entry is not None and (entry.snapshot is not None) == (engine.kept.store.max_snapshot_bytes > 0)
        status, answer = _post(
            engine, RESPONSES, change(engine, key, answers, _turn(scenario, key, _outputs_for(answers[-1])))
        )
        after = answer if status == 200 and isinstance(answer, dict) else answers[-1]
        follow = _post(engine, RESPONSES, _turn(scenario, key, _outputs_for(after) or "and?"))
        seen.append((status, answer, follow, _items(engine, key)))
    assert seen[0] == seen[1], seen


def _input(*items: Any) -> Change:
    return lambda engine, key, answers, body: {**body, "input": [*body["input"], *items]}


def _add_items(engine: sandbox.Engine, key: str, answers: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
    note = {"type": "message", "role": "user", "content": "A note added by the items API."}
    assert _post(engine, f"{CONVERSATIONS}/{key}/items", {"items": [note]})[0] == 200
    return body


def _delete_output(
    engine: sandbox.Engine, key: str, answers: list[dict[str, Any]], body: dict[str, Any]
) -> dict[str, Any]:
    output = next(item for item in _items(engine, key) if item["type"] == "function_call_output")
    assert engine.handle("DELETE", f"{CONVERSATIONS}/{key}/items/{output['id']}", b"").status == 200
    return body


def _new_metadata(
    engine: sandbox.Engine, key: str, answers: list[dict[str, Any]], body: dict[str, Any]
) -> dict[str, Any]:
    assert _post(engine, f"{CONVERSATIONS}/{key}", {"metadata": {"lesson": "2"}})[0] == 200
    return body


def _listed_item_again(
    engine: sandbox.Engine, key: str, answers: list[dict[str, Any]], body: dict[str, Any]
) -> dict[str, Any]:
    return {**body, "input": [*body["input"], _items(engine, key)[1]]}


CHANGES: dict[str, Change] = {
    "well formed": lambda engine, key, answers, body: body,
    "a second output for the call": lambda engine, key, answers, body: {**body, "input": body["input"] * 2},
    "an output for a call answered before": _input(*[]),
    "an output for no call": _input({"type": "function_call_output", "call_id": "call_nope", "output": "x"}),
    "an item id the conversation holds": _input({**FIRST, "content": "?"}),
    "a listed item sent again": _listed_item_again,
    "a listed item edited and sent again": lambda engine, key, answers, body: {
        **body,
        "input": [*body["input"], {**_items(engine, key)[0], "content": [{"type": "input_text", "text": "Rain?"}]}],
    },
    "an earlier call sent again with other arguments": lambda engine, key, answers, body: {
        **body,
        "input": [
            *body["input"],
            *(
                {name: value for name, value in item.items() if name != "id"} | {"arguments": '{"city": "Lyon"}'}
                for item in answers[0]["output"]
                if item["type"] == "function_call"
            ),
        ],
    },
    "no output for the call": lambda engine, key, answers, body: {**body, "input": [{"role": "user", "content": "?"}]},
    "a string input": lambda engine, key, answers, body: {**body, "input": "and now?"},
    "an empty input": lambda engine, key, answers, body: {**body, "input": []},
    "new instructions": lambda engine, key, answers, body: {**body, "instructions": "Be brief."},
    "another scenario": lambda engine, key, answers, body: {**body, "model": "single_call"},
    "an unknown field": lambda engine, key, answers, body: {**body, "temperature_x": 1},
    "a bad item": _input({"type": "message", "role": "wizard"}),
    "the answer's items echoed again": lambda engine, key, answers, body: {
        **body,
        "input": [*answers[-1]["output"], *body["input"]],
    },
    "a model turn of the client's": _input({"role": "assistant", "content": "I made this up."}),
    "store false": lambda engine, key, answers, body: {**body, "store": False},
    "streamed": lambda engine, key, answers, body: {**body, "stream": True},
    "with previous_response_id": lambda engine, key, answers, body: {**body, "previous_response_id": answers[-1]["id"]},
    "an unknown conversation": lambda engine, key, answers, body: {**body, "conversation": "conv_nope"},
    "the conversation as an object": lambda engine, key, answers, body: {**body, "conversation": {"id": key}},
    "a lone surrogate": lambda engine, key, answers, body: {
        **body,
        "input": [{**body["input"][0], "output": "\ud800"}],
    },
    "Infinity in an output": lambda engine, key, answers, body: {
        **body,
        "input": [{**body["input"][0], "output": "Infinity"}],
    },
    "its answer continued by previous_response_id": lambda engine, key, answers, body: {
        **{name: value for name, value in body.items() if name != "conversation"},
        "previous_response_id": answers[-1]["id"],
    },
    "an older answer continued by previous_response_id": lambda engine, key, answers, body: {
        **{name: value for name, value in body.items() if name != "conversation"},
        "previous_response_id": answers[1]["id"],
        "input": _outputs_for(answers[1]),
    },
    "items added between turns": _add_items,
    "an item deleted between turns": _delete_output,
    "new metadata between turns": _new_metadata,
}
CHANGES["an output for a call answered before"] = lambda engine, key, answers, body: {
    **body,
    "input": [*body["input"], *_outputs_for(answers[0])],
}


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_a_conversation_turn_from_its_snapshot_answers_as_the_whole_conversation_walked_again(change: str) -> None:
    _continue_with(CHANGES[change])


@pytest.mark.parametrize("change", ["well formed", "the answer's items echoed again", "a listed item sent again"])
def test_a_reasoning_conversation_from_its_snapshot_answers_as_the_whole_walk(change: str) -> None:
    _continue_with(CHANGES[change], "runaway_reasoning")


def test_a_conversation_turn_costs_the_same_calls_at_depth_120_as_at_depth_5() -> None:
    """One turn at the end of a conversation 5 turns long and one 120 long make exactly the same
    function calls, where walking the whole conversation again made many times as many at 120."""
    counts = []
    for depth in (5, 120):
        stable_token.cache_clear()
        engine = sandbox.Engine(budget=200)
        key, answers = _conversation(engine, "runaway", depth)
        request = json.dumps(_turn("runaway", key, _outputs_for(answers[-1]))).encode()
        exchanges: list[sandbox.Exchange] = []
        counts.append(_calls_of(functools.partial(_answer_into, exchanges, engine, request)))
        assert exchanges[0].status == 200, exchanges[0].body
    assert counts[0] == counts[1], counts


def test_another_senders_turn_is_refused_with_or_without_the_snapshot() -> None:
    seen = []
    for engine in _twins():
        key, answers = _conversation(engine, "runaway", 3)
        body = _turn("runaway", key, _outputs_for(answers[-1]))
        seen.append((_post(engine, RESPONSES, body, key="sk-other"), _post(engine, RESPONSES, body)))
    assert seen[0] == seen[1], seen
    (refused, _), (answered, _) = seen[0]
    assert refused == 404 and answered == 200


def test_an_evicted_conversation_is_refused_with_or_without_its_snapshot() -> None:
    seen = []
    for engine in _twins():
        key, answers = _conversation(engine, "runaway", 3)
        assert engine.kept.store.remove(key, "")
        seen.append(_post(engine, RESPONSES, _turn("runaway", key, _outputs_for(answers[-1]))))
    assert seen[0] == seen[1] and seen[0][0] == 404, seen


def _send(engine: sandbox.Engine, body: dict[str, Any], statuses: list[int]) -> None:
    statuses.append(_post(engine, RESPONSES, body)[0])


def test_racing_turns_leave_no_snapshot_of_items_the_conversation_does_not_hold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two turns of one conversation that both read it before either is appended: both are answered
    and appended, and a snapshot is kept only if it walked exactly the items the conversation then
    holds, so the next turn answers as the twin that walks the whole conversation."""
    append = _turns.append_turn
    gate = threading.Barrier(2, timeout=30)

    def racing(*args: Any) -> None:
        gate.wait()  # both requests have read the conversation
        append(*args)

    seen = []
    for engine in _twins():
        key, answers = _conversation(engine, "runaway", 2)
        monkeypatch.setattr(_turns, "append_turn", racing)
        monkeypatch.setattr(sandbox.engine.kept, "append_turn", racing)
        bodies = [_turn("runaway", key, _outputs_for(answers[-1], text)) for text in ("one", "two")]
        statuses: list[int] = []
        workers = [threading.Thread(target=_send, args=(engine, body, statuses)) for body in bodies]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        monkeypatch.undo()
        assert statuses == [200, 200]
        entry = engine.kept.store.get(key)
        assert entry is not None
        if isinstance(entry.snapshot, ContinuationState):
            assert entry.snapshot.walked.items == len(_items(engine, key))
        seen.append(_post(engine, RESPONSES, _turn("runaway", key, [{"role": "user", "content": "three"}]))[0])
    assert seen[0] == seen[1], seen
