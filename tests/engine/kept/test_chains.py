"""A `previous_response_id` continuation costs what is new, not what its chain holds, and answers exactly
as the whole chain walked again would (`sandbox/engine/kept/_chain.py`)."""

from __future__ import annotations

import functools
import gc
import json
import sys
from collections.abc import Callable
from typing import Any

import pytest

import sandbox
from sandbox.engine.kept._memory import SNAPSHOT_SHARE
from sandbox.wire._base import stable_token

RESPONSES = "/v1/responses"


def _tools(scenario: str) -> list[dict[str, Any]]:
    tools = sandbox.get_scenario(scenario).tools
    return [
        {"type": "function", "name": tool.name, "parameters": dict(tool.parameters), "strict": False} for tool in tools
    ]


def _post(engine: sandbox.Engine, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    exchange = engine.handle("POST", RESPONSES, json.dumps(body).encode())
    return exchange.status, json.loads(exchange.body)


def _outputs_for(answer: dict[str, Any], text: str = "18C") -> list[dict[str, Any]]:
    calls = [item for item in answer["output"] if item["type"] == "function_call"]
    return [{"type": "function_call_output", "call_id": call["call_id"], "output": text} for call in calls]


FIRST = {"type": "message", "role": "user", "content": "Weather?", "id": "msg_first"}


def _chain(engine: sandbox.Engine, scenario: str, depth: int) -> list[dict[str, Any]]:
    """The answers of a chain `depth` continuations long (each sends only the calls' outputs)."""
    status, answer = _post(engine, {"model": scenario, "input": [FIRST], "tools": _tools(scenario)})
    answers = [answer]
    for _ in range(depth):
        assert status == 200, answer
        body = {"model": scenario, "previous_response_id": answer["id"], "tools": _tools(scenario)}
        status, answer = _post(engine, {**body, "input": _outputs_for(answer)})
        answers.append(answer)
    assert status == 200, answer
    return answers


def _forget_memos() -> None:
    """Empty the sandbox's memos (ids from seeds, rendered answers): what other tests left in them
    would spare a call here and not there (an id of step 6 is likelier cached than one of step 121)."""
    for name, module in list(sys.modules.items()):
        if name == "sandbox" or name.startswith("sandbox."):
            for value in list(vars(module).values()):
                if hasattr(value, "cache_info") and hasattr(value, "cache_clear"):
                    value.cache_clear()


def _calls_of(call: Callable[[], object]) -> int:
    """Python and C function calls made by `call()`: work that a chain's length could add to."""
    calls = [0]

    def count(frame: object, event: str, arg: object) -> None:
        if event in ("call", "c_call"):
            calls[0] += 1

    _forget_memos()
    gc.collect()  # no finalizer of another test's garbage may run (and count) during `call`
    gc.disable()
    sys.setprofile(count)
    try:
        call()
    finally:
        sys.setprofile(None)
        gc.enable()
    return calls[0]


def _answer_into(
    exchanges: list[sandbox.Exchange], engine: sandbox.Engine, request: bytes, path: str = RESPONSES
) -> None:
    exchanges.append(engine.handle("POST", path, request))


def test_a_continuation_costs_the_same_calls_at_the_end_of_a_long_chain_as_of_a_short_one() -> None:
    """One continuation at the end of a chain 5 long and one 120 long make exactly the same function
    calls: what is left of the chain's length is copying pointers, where walking the whole chain
    again made many times as many calls at depth 120 as at depth 5."""
    counts = []
    for depth in (5, 120):
        # The ids' cache as a fresh process has it: other tests that filled it would evict some of this
        # chain's ids while it is built, and recomputing them would be counted (test order must not matter).
        stable_token.cache_clear()
        engine = sandbox.Engine(budget=200)
        answer = _chain(engine, "runaway", depth)[-1]
        body = {"model": "runaway", "previous_response_id": answer["id"], "tools": _tools("runaway")}
        request = json.dumps({**body, "input": _outputs_for(answer)}).encode()
        exchanges: list[sandbox.Exchange] = []
        counts.append(_calls_of(functools.partial(_answer_into, exchanges, engine, request)))
        assert exchanges[0].status == 200
    assert counts[0] == counts[1], counts


def _twins(kept_mib: float = 64) -> tuple[sandbox.Engine, sandbox.Engine]:
    """Two fresh engines, the second keeping no snapshot: every continuation walks its whole history
    (a chain, a thread, a conversation)."""
    fast, whole = sandbox.Engine(budget=200, kept_mib=kept_mib), sandbox.Engine(budget=200, kept_mib=kept_mib)
    whole.kept.store.max_snapshot_bytes = 0
    return fast, whole


Change = Callable[[list[dict[str, Any]], dict[str, Any]], dict[str, Any]]


def _continue_with(change: Change, scenario: str) -> None:
    """The same chain in both engines, then the continuation `change` makes of (the chain's answers, a
    well-formed continuation): the same status and body from both (the ids match: both number alike)."""
    answers = []
    for engine in _twins():
        chain = _chain(engine, scenario, 3)
        answer = chain[-1]
        body = {"model": scenario, "previous_response_id": answer["id"], "tools": _tools(scenario)}
        body["input"] = _outputs_for(answer)
        answers.append(_post(engine, change(chain, body)))
        answers.append(_post(engine, change(chain, body)))  # and again: the snapshot it left, if any
    assert answers[0] == answers[2] and answers[1] == answers[3], answers


def _call_id(answer: dict[str, Any]) -> str:
    return str(next(item["call_id"] for item in answer["output"] if item["type"] == "function_call"))


CHANGES: dict[str, Change] = {
    "well formed": lambda chain, body: body,
    "a second output for the call": lambda chain, body: {**body, "input": body["input"] * 2},
    "an output for a call the chain answered": lambda chain, body: {
        **body,
        "input": [*body["input"], *_outputs_for(chain[0])],
    },
    "an output for no call": lambda chain, body: {
        **body,
        "input": [*body["input"], {"type": "function_call_output", "call_id": "call_nope", "output": "x"}],
    },
    "an item id the chain holds": lambda chain, body: {**body, "input": [*body["input"], {**FIRST, "content": "?"}]},
    "no output for the call": lambda chain, body: {**body, "input": [{"role": "user", "content": "and?"}]},
    "a string input": lambda chain, body: {**body, "input": "and now?"},
    "an empty input": lambda chain, body: {**body, "input": []},
    "new instructions": lambda chain, body: {**body, "instructions": "Be brief."},
    "another scenario": lambda chain, body: {**body, "model": "single_call"},
    "an unknown field": lambda chain, body: {**body, "temperature_x": 1},
    "a bad item": lambda chain, body: {**body, "input": [*body["input"], {"type": "message", "role": "wizard"}]},
    "the answer's items echoed again": lambda chain, body: {**body, "input": [*chain[-1]["output"], *body["input"]]},
    "a model turn of the client's": lambda chain, body: {
        **body,
        "input": [*body["input"], {"role": "assistant", "content": "I made this up."}],
    },
    "store false": lambda chain, body: {**body, "store": False},
}


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_a_continuation_from_its_chains_snapshot_answers_as_the_whole_chain_walked_again(change: str) -> None:
    _continue_with(CHANGES[change], "runaway")


@pytest.mark.parametrize("change", ["well formed", "a second output for the call", "the answer's items echoed again"])
def test_a_reasoning_chain_from_its_snapshot_answers_as_the_whole_chain_walked_again(change: str) -> None:
    _continue_with(CHANGES[change], "runaway_reasoning")


def test_a_reasoning_continuation_without_its_reasoning_item_gets_the_whole_walks_error() -> None:
    def drop_reasoning(chain: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
        echoed = [item for item in chain[-1]["output"] if item["type"] != "reasoning"]
        return {**body, "input": [*echoed, *body["input"]]}

    _continue_with(drop_reasoning, "runaway_reasoning")


def test_snapshots_count_against_the_bound_and_go_before_any_stored_response() -> None:
    """Stored responses of 100 messages each, past a 1 MiB bound: each holds a snapshot while it is
    the newest, however full the store, what the store counts stays within its bound, and the
    snapshots take no more than their share of it from the responses kept."""
    kept = []
    for engine in _twins(kept_mib=1):
        store = engine.kept.store
        for index in range(400):
            items = [{"role": "user", "content": f"m{index}.{n}"} for n in range(100)]
            status, answer = _post(engine, {"model": "plain_text", "input": items})
            assert status == 200
            assert store.held <= store.max_bytes
            newest = store.get(answer["id"])
            assert newest is not None and (newest.snapshot is not None) == (store.max_snapshot_bytes > 0)
        kept.append(len(engine.kept))
        assert store.evictions > 0
    assert kept[1] * (SNAPSHOT_SHARE - 1) // SNAPSHOT_SHARE <= kept[0] < kept[1], kept


def test_a_chain_that_lost_an_older_turn_is_refused_with_or_without_its_snapshot() -> None:
    """The first turn of a chain 4 long is forgotten: continuing its newest response is refused, with
    the same answer whether the newest response still holds its snapshot or not."""
    answers = []
    for engine in _twins():
        chain = _chain(engine, "runaway", 3)
        assert engine.kept.store.remove(chain[0]["id"], "")
        body = {"model": "runaway", "previous_response_id": chain[-1]["id"], "tools": _tools("runaway")}
        answers.append(_post(engine, {**body, "input": _outputs_for(chain[-1])}))
    assert answers[0] == answers[1] and answers[0][0] != 200, answers
    assert "Previous response with id" in answers[0][1]["error"]["message"], answers


def _mutables(root: object) -> dict[int, object]:
    """Every dict, list and set reachable from `root` through containers and the sandbox's objects."""
    found: dict[int, object] = {}
    seen: set[int] = set()
    stack = [root]
    while stack:
        current = stack.pop()
        if id(current) in seen or isinstance(current, (str, bytes, int, float, type)) or current is None:
            continue
        seen.add(id(current))
        if isinstance(current, (dict, list, set)):
            found[id(current)] = current
        if isinstance(current, (dict, list, set, tuple, frozenset)) or type(current).__module__.startswith("sandbox"):
            stack.extend(gc.get_referents(current))
    return found


def _scramble(value: Any) -> None:
    """Change every dict and list inside `value` in place: what a caller holding the answer might do."""
    if isinstance(value, dict):
        for key in list(value):
            _scramble(value[key])
            value[key] = "changed" if isinstance(value[key], str) else value[key]
        value["added"] = ["x"]
    elif isinstance(value, list):
        for item in value:
            _scramble(item)
        value.append({"type": "message", "role": "user", "content": "appended"})


@pytest.mark.parametrize("scenario", ["runaway", "runaway_reasoning", "plain_text"])
def test_a_snapshot_holds_none_of_the_answers_objects(scenario: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The snapshot walks the answer's own items (not a parse of their bytes): it holds no dict or list
    the answer holds, so changing the answer afterwards changes neither the snapshot nor what a
    continuation gets, and the stored bytes are the compact JSON of the answer as it was sent."""
    from sandbox.engine import kept as _kept

    responses: list[dict[str, Any]] = []
    snapshot = _kept.KeptState._snapshot

    def spy(entry: Any, expanded: Any, response: dict[str, Any], reply: bytes) -> None:
        responses.append(response)
        snapshot(entry, expanded, response, reply)

    monkeypatch.setattr(_kept.KeptState, "_snapshot", staticmethod(spy))
    answers = []
    for engine in _twins():
        tools = _tools(scenario)
        status, answer = _post(engine, {"model": scenario, "input": [FIRST], **({"tools": tools} if tools else {})})
        assert status == 200
        entry = engine.kept.store.get(answer["id"])
        assert entry is not None
        sent = json.dumps([FIRST, *answer["output"]], ensure_ascii=False, separators=(",", ":")).encode()
        assert b"[" + entry.items + b"]" == sent  # the user's item, then the answer's, compact
        if engine.kept.store.max_snapshot_bytes:
            assert entry.snapshot is not None
            held = _mutables(entry.snapshot)
            owned = _mutables(responses[-1])
            assert not set(held) & set(owned)
        _scramble(responses[-1])
        assert b"[" + entry.items + b"]" == sent
        body = {"model": scenario, "previous_response_id": answer["id"], **({"tools": tools} if tools else {})}
        answers.append(_post(engine, {**body, "input": _outputs_for(answer) or "and?"}))
    assert answers[0] == answers[1], answers
