"""Kept state in a shared store (SQLite, Redis): engines in one process or several behave as one.

A continuation may land on any engine that shares the store; ids stay unique among them and across a
restart; of two processes continuing one thread turn exactly one wins; a store that cannot be
reached answers a provider-shaped 503; a Redis that restarts without persistence has forgotten
everything, and says so in the provider's own "not found".
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import sandbox
from sandbox import UsageError, skyl
from sandbox.wire import get_wire_format
from tests.conftest import lesson_loop, scenario_request, scripted_run
from tests.engine.kept.test_senders import CREATE, _continue, _post, _responses_continue
from tests.stores import redis_server

ASK = {
    "model": "single_call",
    "input": "What's the weather in Paris?",
    "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}, "strict": False}],
}


def test_a_stored_response_is_continued_on_another_engine_sharing_the_store(shared_store: str) -> None:
    first, second = sandbox.Engine(store=shared_store), sandbox.Engine(store=shared_store)
    status, answer = _post(first, "/v1/responses", ASK)
    assert status == 200
    status, final = _post(second, "/v1/responses", _responses_continue(answer))
    assert status == 200, final
    assert final["previous_response_id"] == answer["id"]
    assert final["output"][-1]["type"] == "message"


def test_a_thread_turn_continued_on_one_engine_is_refused_on_the_other(shared_store: str) -> None:
    first, second = sandbox.Engine(store=shared_store), sandbox.Engine(store=shared_store)
    answer = _post(first, "/v1/messages", CREATE)[1]
    assert _post(first, "/v1/messages", _continue(answer))[0] == 200
    status, refused = _post(second, "/v1/messages", _continue(answer))
    assert status == 400
    assert refused["error"]["details"]["error_code"] == "thread_already_continued"


def test_a_conversation_made_on_one_engine_grows_on_another(shared_store: str) -> None:
    first, second = sandbox.Engine(store=shared_store), sandbox.Engine(store=shared_store)
    conversation = _post(first, "/v1/conversations", {"items": [{"role": "user", "content": "hi"}]})[1]
    status, answer = _post(second, "/v1/responses", {**ASK, "conversation": conversation["id"]})
    assert status == 200, answer
    items = json.loads(first.handle("GET", f"/v1/conversations/{conversation['id']}/items", b"", query="").body)
    assert len(items["data"]) == 1 + 1 + len(answer["output"])  # "hi", the question, the answer's items


def test_engines_sharing_a_store_never_issue_the_same_id_even_after_a_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kept.db'}"
    ids = [_post(sandbox.Engine(store=url), "/v1/responses", ASK)[1]["id"] for _ in range(3)]  # a restart each
    assert len(set(ids)) == 3
    stored = _post(sandbox.Engine(store=url), "/v1/responses", ASK)[1]
    assert _post(sandbox.Engine(store=url), "/v1/responses", _responses_continue(stored))[0] == 200


_CHILD = """
import json, sys
import sandbox
engine = sandbox.Engine(store=sys.argv[1])
body = sys.stdin.readline().encode()
print("ready", flush=True)
sys.stdin.readline()  # the go signal
exchange = engine.handle("POST", sys.argv[2], body)
print(json.dumps({"status": exchange.status, "body": json.loads(exchange.body)}), flush=True)
"""


def _race(url: str, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """Send `body` from two processes at once (each its own engine on the store `url`); their answers."""
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, url, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    try:
        for child in children:
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(json.dumps(body) + "\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "ready"
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.close()
        answers = []
        for child in children:
            assert child.stdout is not None
            answers.append(json.loads(child.stdout.read()))
            child.stdout.close()
        return answers
    finally:
        for child in children:
            child.kill()
            child.wait(timeout=30)


@pytest.mark.slow
def test_two_processes_continuing_one_thread_turn_exactly_one_wins(shared_store: str) -> None:
    engine = sandbox.Engine(store=shared_store)
    for _ in range(3):
        answer = _post(engine, "/v1/messages", CREATE)[1]
        outcomes = _race(shared_store, "/v1/messages", _continue(answer))
        assert sorted(outcome["status"] for outcome in outcomes) == [200, 400], outcomes
        refused = next(outcome["body"] for outcome in outcomes if outcome["status"] == 400)
        assert refused["error"]["details"]["error_code"] in ("thread_continue_in_flight", "thread_already_continued")


@pytest.mark.slow
def test_a_response_stored_by_one_process_is_continued_by_two_others(shared_store: str) -> None:
    answer = _post(sandbox.Engine(store=shared_store), "/v1/responses", ASK)[1]
    outcomes = _race(shared_store, "/v1/responses", _responses_continue(answer))
    assert [outcome["status"] for outcome in outcomes] == [200, 200], outcomes
    assert outcomes[0]["body"]["id"] != outcomes[1]["body"]["id"]


def test_an_unreachable_store_answers_a_provider_shaped_503(tmp_path: Path) -> None:
    with redis_server(tmp_path) as url:
        pass  # started and stopped: nothing listens on its port now
    engine = sandbox.Engine(store=url)
    for path, body in [("/v1/responses", ASK), ("/v1/messages", CREATE), ("/v1/conversations", {})]:
        exchange = engine.handle("POST", path, json.dumps(body).encode())
        assert exchange.status == 503, exchange.body
        message = json.loads(exchange.body)["error"]["message"]
        assert message.startswith(f"sandbox: the kept-state store {url} did not answer")
        assert "start the Redis server or check the address in `--store`" in message


def test_a_redis_restart_without_persistence_gets_the_providers_not_found(tmp_path: Path) -> None:
    with redis_server(tmp_path) as url:
        answer = _post(sandbox.Engine(store=url), "/v1/responses", ASK)[1]
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with redis_server(tmp_path, port=port):
        status, error = _post(sandbox.Engine(store=url), "/v1/responses", _responses_continue(answer))
    assert status == 400
    message = error["error"]["message"]
    assert message.startswith(f"Previous response with id '{answer['id']}' not found.")
    assert "forgets them all when it restarts without persistence" in message


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgres://db", "not a store the sandbox knows"),
        ("sqlite://relative.db", "not a store the sandbox knows"),
        ("sqlite:////no/such/folder/kept.db", "SQLite cannot open that file"),
    ],
)
def test_a_store_url_the_sandbox_cannot_use_has_clear_error(url: str, expected: str) -> None:
    with pytest.raises(UsageError, match=expected):
        sandbox.Engine(store=url)


def _recorded_run(name: str) -> list[bytes]:
    recorded = sandbox.transport()
    lesson_loop(skyl.Client("anthropic", transport=recorded), scenario_request(name), scripted_run(name))
    return [exchange.request_body for exchange in recorded.journal]


def test_complete_runs_whose_turns_land_on_two_engines_sharing_a_store_are_never_refused(shared_store: str) -> None:
    """Two server processes behind one address: a run's first request on one, its continuations on the
    other. The first sees the conversation move on through the store, so reruns stay reruns."""
    first, *rest = _recorded_run("multi_step")
    one, other = sandbox.Engine(store=shared_store), sandbox.Engine(store=shared_store)
    statuses = set()
    for _ in range(60):  # past the budget of 50
        statuses.add(one.handle("POST", "/v1/messages", first, client="conn-1").status)
        statuses |= {other.handle("POST", "/v1/messages", body, client="conn-2").status for body in rest}
    assert statuses == {200}


def test_a_runaway_is_refused_whichever_engine_sharing_the_store_counts_it(shared_store: str) -> None:
    first = _recorded_run("multi_step")[0]
    engines = [sandbox.Engine(store=shared_store, budget=5) for _ in range(2)]
    statuses = [engines[0].handle("POST", "/v1/messages", first, client="conn-1").status for _ in range(6)]
    assert statuses == [200] * 5 + [400]
    assert engines[1].handle("POST", "/v1/messages", first, client="conn-1").status == 200  # another process's sender


def test_a_thread_turn_held_by_a_process_that_died_is_given_back_after_the_hold(
    shared_store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process killed while answering a continuation never releases the turn it holds: the others
    refuse it as in flight only for `HOLD_SECONDS`, then continue it."""
    engine = sandbox.Engine(store=shared_store)
    answer = _post(engine, "/v1/messages", CREATE)[1]
    body = json.dumps(_continue(answer)).encode()
    engine.kept.expand(get_wire_format("anthropic"), body)  # taken, never answered: its process died
    status, refused = _post(sandbox.Engine(store=shared_store), "/v1/messages", _continue(answer))
    assert (status, refused["error"]["details"]["error_code"]) == (400, "thread_continue_in_flight")
    backend = "_sqlite" if shared_store.startswith("sqlite") else "_redis"
    monkeypatch.setattr(f"sandbox.engine.kept.{backend}.HOLD_SECONDS", 0.0)
    assert _post(sandbox.Engine(store=shared_store), "/v1/messages", _continue(answer))[0] == 200


@pytest.mark.slow
def test_a_sqlite_store_held_too_long_by_another_process_answers_503(tmp_path: Path) -> None:
    """Never a hang: past SQLite's busy timeout the request gets a 503 that says what to do."""
    import sqlite3

    url = f"sqlite:///{tmp_path / 'kept.db'}"
    engine = sandbox.Engine(store=url)
    holder = sqlite3.connect(tmp_path / "kept.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        exchange = engine.handle("POST", "/v1/responses", json.dumps(ASK).encode())
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert exchange.status == 503
    message = json.loads(exchange.body)["error"]["message"]
    assert message.startswith(f"sandbox: the kept-state store {tmp_path / 'kept.db'} did not answer")
    assert "retry the request" in message


def test_a_retry_after_a_fault_is_counted_by_another_engine_sharing_the_store(shared_store: str) -> None:
    """Two server processes behind one address: a client's first attempt gets its scripted 429 from
    one; its retry, on a new connection, reaches the other, which answers it as the retry it is."""
    one, other = (sandbox.Engine(store=shared_store, faults="rate_limit@1:retry_after=0.01") for _ in range(2))
    body = json.dumps(ASK).encode()
    assert one.handle("POST", "/v1/responses", body, client="192.0.2.7:40001").status == 429
    time.sleep(0.02)  # the retry hint, honoured
    retried = other.handle("POST", "/v1/responses", body, client="192.0.2.7:40002")
    assert retried.status == 200, retried.body
    assert other.handle("POST", "/v1/responses", body, client="198.51.100.9:40003").status == 429  # another client


def test_a_retry_before_the_hint_is_refused_by_another_engine_sharing_the_store(shared_store: str) -> None:
    one, other = (sandbox.Engine(store=shared_store, faults="rate_limit@1:retry_after=5") for _ in range(2))
    body = json.dumps(ASK).encode()
    assert one.handle("POST", "/v1/responses", body, client="192.0.2.7:40001").status == 429
    early = other.handle("POST", "/v1/responses", body, client="192.0.2.7:40002")
    assert early.status == 429
    assert early.error is not None and getattr(early.error, "early", False), "the hint had not passed"
