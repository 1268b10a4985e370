"""Grading for 07_failing_tools: a tool that fails, raises or does not exist still gets a result,
marked as an error, and the loop goes on to the model's answer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox import Scenario
from sandbox.grading import GRADING, PROVIDERS, Challenge, tasks


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_error_output_goes_back_and_the_model_recovers(challenge: Challenge, provider: str) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue("tool_error_recovery", provider)
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_answer(outcome, bound=5)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_tool_that_raises_becomes_an_error_result(challenge: Challenge, provider: str) -> None:
    complete = challenge.function("complete")
    failing = {"get_weather(city='Pariss')": "weather service: no such city 'Pariss'"}
    talk = challenge.dialogue("tool_error_recovery", provider, failing=failing)
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_answer(outcome, bound=5)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("raises", ["ValueError", "ConnectionError"])
def test_whatever_a_tool_raises_becomes_an_error_result(challenge: Challenge, raises: str, provider: str) -> None:
    """Tools fail in their own ways: any exception a tool raises is the model's to read."""
    complete = challenge.function("complete")
    failing = {"get_weather(city='Pariss')": "weather service: no such city 'Pariss'"}
    talk = challenge.dialogue("tool_error_recovery", provider, failing=failing, raises=raises)
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_answer(outcome, bound=5)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_failing_call_without_arguments_becomes_an_error_result(challenge: Challenge, provider: str) -> None:
    """get_time() takes no arguments, and fails."""
    complete = challenge.function("complete")
    talk = challenge.dialogue("no_arguments", provider, failing={"get_time()": "clock service unavailable"})
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_answer(outcome, bound=5)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_unknown_tool_becomes_an_error_result(challenge: Challenge, provider: str) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue("parallel_calls", provider, unknown_tools={"get_time"})
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_answer(outcome, bound=5)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_raises_once_the_bound_is_hit(challenge: Challenge, provider: str) -> None:
    """A model that asks for the same tool forever: the loop must still raise after 5 requests."""
    complete = challenge.function("complete")
    talk = challenge.dialogue("runaway", provider)
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_gave_up(outcome, bound=5)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_refused_request_reaches_the_caller(challenge: Challenge, provider: str) -> None:
    """The provider refuses request 2 (the conversation is too long): catch the tool's failure, not that."""
    complete = challenge.function("complete")
    failing = {"get_weather(city='Pariss')": "weather service: no such city 'Pariss'"}
    talk = challenge.dialogue("tool_error_recovery", provider, failing=failing, refuse=2)
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_provider_error_raised(outcome)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_any_failing_calls_become_error_results(challenge: Challenge, provider: str) -> None:
    """Generated: up to three rounds of 1 to 8 calls; any of them may raise, or name an unknown tool."""
    complete = challenge.function("complete")

    @GRADING
    @given(scenario=tasks(rounds=(1, 3), calls=(1, 8)), data=st.data())
    def check(scenario: Scenario, data: st.DataObject) -> None:
        calls = sorted({repr(call) for step in scenario.steps for call in step.calls})
        failing = data.draw(st.lists(st.sampled_from(calls), unique=True), label="failing calls")
        names = [tool.name for tool in scenario.tools]
        unknown = data.draw(st.sets(st.sampled_from(names), max_size=1), label="unknown tools")
        talk = challenge.dialogue(
            scenario, provider, failing={call: f"{call} failed" for call in failing}, unknown_tools=unknown
        )
        outcome = talk.call(complete, talk.client, talk.request, talk.run)
        talk.expect_answer(outcome, bound=5)

    check()
