"""A stored response's walk of its answer waits for its first continuation (`LaterWalk`): most stored
responses are never continued. Walked later, it is the walk `walk_answer` makes at once, the store
counts it as that walk before it exists, and continuations racing for it walk it once."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

import sandbox
from sandbox.wire.openai_responses import LaterWalk, Walked, walk_answer
from sandbox.wire.openai_responses._parse import parse_continuing

RESPONSES = "/v1/responses"
FIRST = {"type": "message", "role": "user", "content": "Weather?", "id": "msg_first"}


def _tools(scenario: str) -> list[dict[str, Any]]:
    return [
        {"type": "function", "name": tool.name, "parameters": dict(tool.parameters), "strict": False}
        for tool in sandbox.get_scenario(scenario).tools
    ]


def _answer(engine: sandbox.Engine, body: dict[str, Any]) -> dict[str, Any]:
    exchange = engine.handle("POST", RESPONSES, json.dumps(body).encode())
    assert exchange.status == 200, exchange.body
    answer: dict[str, Any] = json.loads(exchange.body)
    return answer


def _reply(output: list[Any]) -> bytes:
    return json.dumps(output, ensure_ascii=False, separators=(",", ":")).encode()[1:-1]


def _fields(walked: Walked) -> tuple[Any, ...]:
    return (
        walked.turns,
        walked.messages,
        walked.paths,
        walked.items,
        walked.open_assistant,
        walked.waiting,
        walked.item_ids,
        walked.checked,
    )


@pytest.mark.parametrize("scenario", ["runaway", "runaway_reasoning", "plain_text", "single_call"])
def test_a_later_walk_is_the_walk_made_at_once(scenario: str) -> None:
    """Over a chain three answers long: each request walked twice the same way, its answer walked on
    at once by one and later by the other, give equal walks, and the later one's counts are the walk's."""
    engine = sandbox.Engine(budget=20)
    tools = _tools(scenario)
    body: dict[str, Any] = {"model": scenario, "input": [FIRST], **({"tools": tools} if tools else {})}
    chain: Walked | None = None
    previous: dict[str, str] = {}
    for _ in range(3):
        answer = _answer(engine, {**body, **previous})
        output = answer["output"]
        _, at_once = parse_continuing(json.loads(json.dumps(body)), chain)
        _, later = parse_continuing(json.loads(json.dumps(body)), chain)
        pending = LaterWalk.after(later, output, _reply(output))
        walked = walk_answer(at_once, json.loads(json.dumps(output)))
        assert pending is not None and walked is not None
        assert (pending.messages, pending.ids) == (len(walked.messages), len(walked.item_ids))
        again = pending.walk()
        assert again is not None and _fields(again) == _fields(walked)
        assert pending.walk() is again  # walked once
        chain = walked
        calls = [item for item in output if item["type"] == "function_call"]
        if not calls:
            break
        outputs = [{"type": "function_call_output", "call_id": call["call_id"], "output": "18C"} for call in calls]
        body = {"model": scenario, "input": outputs, **({"tools": tools} if tools else {})}
        previous = {"previous_response_id": answer["id"]}


def test_a_string_input_leaves_no_later_walk() -> None:
    """A string `input` is `input[0]` in a continuation's history: as with `walk_answer`, no walk to go on."""
    engine = sandbox.Engine()
    body = {"model": "plain_text", "input": "hi"}
    answer = _answer(engine, body)
    _, parser = parse_continuing(body, None)
    assert LaterWalk.after(parser, answer["output"], _reply(answer["output"])) is None
    assert walk_answer(parser, answer["output"]) is None


def test_a_stored_response_is_walked_by_its_first_continuation_only() -> None:
    """The store holds the walk unwalked until a continuation claims the response; eight continuations
    racing for it (each sender its own branch) all get the one walk and the same answer."""
    engine = sandbox.Engine()
    first = _answer(engine, {"model": "runaway", "input": [FIRST], "tools": _tools("runaway")})
    entry = engine.kept.store.get(first["id"])
    assert entry is not None and entry.snapshot is not None
    pending = entry.snapshot.walked  # type: ignore[attr-defined]
    assert isinstance(pending, LaterWalk) and pending._parser is not None
    walks: list[Walked | None] = []
    real = LaterWalk.walk

    def spy(self: LaterWalk) -> Walked | None:
        walks.append(real(self))
        return walks[-1]

    calls = [item for item in first["output"] if item["type"] == "function_call"]
    outputs = [{"type": "function_call_output", "call_id": call["call_id"], "output": "18C"} for call in calls]
    body = json.dumps(
        {"model": "runaway", "previous_response_id": first["id"], "input": outputs, "tools": _tools("runaway")}
    )
    bodies: list[bytes] = []
    barrier = threading.Barrier(8)

    def go() -> None:
        barrier.wait()
        exchange = engine.handle("POST", RESPONSES, body.encode())
        bodies.append(exchange.body.replace(json.loads(exchange.body)["id"].encode(), b"ID"))

    LaterWalk.walk = spy  # type: ignore[method-assign]
    try:
        threads = [threading.Thread(target=go) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        LaterWalk.walk = real  # type: ignore[method-assign]
    assert pending._parser is None and pending.walk() is not None
    assert len(set(bodies)) == 1 and len(bodies) == 8
    assert all(walk is walks[0] for walk in walks if walk is not None)
    assert walks and walks[0] is not None


def test_the_waiting_walk_holds_no_list_or_body_the_request_s_caller_has() -> None:
    """The stored walk is the request's own walk, kept: it lets go of the request's body and holds
    its messages and paths as its own tuples, so the answered conversation a caller holds stays whole
    and nothing the caller changes in it reaches a later continuation."""
    engine = sandbox.Engine()
    body = {"model": "runaway", "input": [FIRST], "tools": _tools("runaway")}
    exchange = engine.handle("POST", RESPONSES, json.dumps(body).encode())
    assert exchange.status == 200 and exchange.conversation is not None
    entry = engine.kept.store.get(json.loads(exchange.body)["id"])
    assert entry is not None and entry.snapshot is not None
    pending = entry.snapshot.walked  # type: ignore[attr-defined]
    assert isinstance(pending, LaterWalk) and pending._parser is not None
    conversation = exchange.conversation
    assert conversation.raw["input"] == [FIRST] and len(conversation.messages) == 1
    assert pending._parser.data == {}
    assert pending._parser.messages == tuple(conversation.messages)
    assert pending._parser.messages is not conversation.messages
    assert pending._parser.paths is not conversation.paths
