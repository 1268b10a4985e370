"""The repeat guard tells a runaway from a rerun.

A runaway resends a request without its conversation ever moving on; a test suite, a soak or a
benchmark runs one complete loop again and again through one client, and must never be refused,
however many times it runs through one `sandbox.transport()` in one thread or over one kept-alive
connection.
"""

from __future__ import annotations

import httpx
import pytest

import sandbox
from sandbox import skyl
from tests.conftest import lesson_loop, scenario_request, scripted_run
from tests.loopback import serving

pytestmark = pytest.mark.usefixtures("kept_store")  # each test once per backend (tests/stores.py)

RUNS = 80


@pytest.mark.parametrize("name", ["multi_step", "parallel_calls"])
def test_eighty_complete_runs_through_one_transport_in_one_thread_are_never_refused(provider: str, name: str) -> None:
    transport = sandbox.transport()
    client = skyl.Client(provider, transport=transport)
    answers = {lesson_loop(client, scenario_request(name), scripted_run(name)).text() for _ in range(RUNS)}
    assert len(answers) == 1
    assert not transport.journal.errors()


def test_a_one_request_conversation_run_again_and_again_is_a_rerun(provider: str) -> None:
    """Its answer is the final one: the conversation is at its end each time, however fast it is rerun."""
    client = skyl.Client(provider, transport=sandbox.transport(budget=5))
    for _ in range(RUNS):
        assert client.complete(scenario_request("plain_text")).text()


def test_eighty_complete_runs_over_one_kept_alive_connection_are_never_refused() -> None:
    recorded = sandbox.transport()
    lesson_loop(
        skyl.Client("anthropic", transport=recorded), scenario_request("multi_step"), scripted_run("multi_step")
    )
    bodies = [exchange.request_body for exchange in recorded.journal]
    assert len(bodies) > 2
    with serving(sandbox.Engine()) as base, httpx.Client(base_url=base, timeout=30) as http:
        statuses = {
            http.post("/v1/messages", content=body, headers={"content-type": "application/json"}).status_code
            for _ in range(RUNS)
            for body in bodies
        }
    assert statuses == {200}


def test_a_request_that_never_moves_on_is_still_refused_after_complete_runs(provider: str) -> None:
    """Finished runs reset nothing for a request stuck without its continuation."""
    transport = sandbox.transport(budget=5)
    client = skyl.Client(provider, transport=transport)
    for _ in range(3):
        lesson_loop(client, scenario_request("single_call"), scripted_run("single_call"))
    stuck = scenario_request("single_call")
    for _ in range(5):
        client.complete(stuck)
    with pytest.raises(skyl.ProviderError, match="arrived 6 times.*never moved on"):
        client.complete(stuck)


def test_a_loop_resending_a_later_step_without_its_results_is_refused(provider: str) -> None:
    """A runaway at step 2 of a conversation, not only at its first request."""
    client = skyl.Client(provider, transport=sandbox.transport(budget=4))
    req = scenario_request("multi_step")
    resp = client.complete(req)
    req.messages.append(resp.message)
    for call in resp.tool_calls():
        req.messages.append(skyl.tool_result_message(call.id, scripted_run("multi_step")(call)))
    for _ in range(4):
        assert client.complete(req).tool_calls()
    with pytest.raises(skyl.ProviderError, match="arrived 5 times"):
        client.complete(req)
