"""Grading for 01_apply_tool_results: the assistant turn once, then one result per call, in call order.

The grader fetches the model's turn, hands it to apply_tool_results(), then sends the request it
built to the provider: what the provider accepts, and the order of the results it received, decide.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox import Scenario
from sandbox.grading import GRADING, PROVIDERS, Challenge, tasks
from sandbox.strategies import result_maps


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("scenario", ["single_call", "parallel_calls"])
def test_appends_the_turn_then_one_result_per_call(challenge: Challenge, scenario: str, provider: str) -> None:
    apply_tool_results = challenge.function("apply_tool_results")
    talk = challenge.dialogue(scenario, provider)
    resp = talk.first_response()
    results = {call.id: talk.output(call) for call in resp.tool_calls()}
    outcome = talk.call(apply_tool_results, talk.request, resp, results)
    talk.expect_applied(outcome)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_results_follow_the_calls_not_the_dict(challenge: Challenge, provider: str) -> None:
    apply_tool_results = challenge.function("apply_tool_results")
    talk = challenge.dialogue("parallel_calls", provider)
    resp = talk.first_response()
    results = {call.id: talk.output(call) for call in reversed(resp.tool_calls())}
    outcome = talk.call(apply_tool_results, talk.request, resp, results)
    talk.expect_applied(outcome)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("scenario", "unanswered"), [("single_call", 0), ("parallel_calls", 1)])
def test_a_call_without_a_result_gets_an_error_result(
    challenge: Challenge, scenario: str, unanswered: int, provider: str
) -> None:
    apply_tool_results = challenge.function("apply_tool_results")
    talk = challenge.dialogue(scenario, provider)
    resp = talk.first_response()
    calls = resp.tool_calls()
    results = {call.id: talk.output(call) for index, call in enumerate(calls) if index != unanswered}
    talk.expect_error_for(calls[unanswered])
    outcome = talk.call(apply_tool_results, talk.request, resp, results)
    talk.expect_applied(outcome)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_empty_output_is_a_result_like_any_other(challenge: Challenge, provider: str) -> None:
    """search_docs(query='refund policy') returned "": the tool ran, and its result is the empty text."""
    apply_tool_results = challenge.function("apply_tool_results")
    talk = challenge.dialogue("runaway_empty", provider)
    resp = talk.first_response()
    results = {call.id: talk.output(call) for call in resp.tool_calls()}
    outcome = talk.call(apply_tool_results, talk.request, resp, results)
    talk.expect_applied(outcome)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_results_for_ids_never_called_are_left_out(challenge: Challenge, provider: str) -> None:
    apply_tool_results = challenge.function("apply_tool_results")
    talk = challenge.dialogue("parallel_calls", provider)
    resp = talk.first_response()
    stale = {"call_from_an_earlier_turn": "stale output"}
    results = {**stale, **{call.id: talk.output(call) for call in resp.tool_calls()}}
    outcome = talk.call(apply_tool_results, talk.request, resp, results)
    talk.expect_applied(outcome)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_any_turn_with_any_results(challenge: Challenge, provider: str) -> None:
    """Generated: 1 to 8 calls of any names and arguments; results with calls missing, ids never called,
    in any order."""
    apply_tool_results = challenge.function("apply_tool_results")

    @GRADING
    @given(scenario=tasks(rounds=(1, 1), calls=(1, 8)), data=st.data())
    def check(scenario: Scenario, data: st.DataObject) -> None:
        talk = challenge.dialogue(scenario, provider)
        resp = talk.first_response()
        results = data.draw(result_maps(resp.tool_calls(), outputs=talk.output), label="results")
        for call in resp.tool_calls():
            if call.id not in results:
                talk.expect_error_for(call)
        outcome = talk.call(apply_tool_results, talk.request, resp, results)
        talk.expect_applied(outcome)

    check()
