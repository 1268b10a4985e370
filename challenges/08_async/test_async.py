"""Grading for 08_async: each turn's calls run concurrently (every call of a turn must be in flight
before any returns), their results still follow in call order, a call that fails still gets an error
result (07's rule, with asyncio), a request the provider refuses reaches the caller, and the loop stays
bounded."""

from __future__ import annotations

import pytest
from hypothesis import given

from sandbox import Scenario
from sandbox.grading import GRADING, PROVIDERS, Challenge, tasks


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("scenario", ["parallel_calls", "parallel_rounds"])
def test_runs_the_calls_of_a_turn_concurrently(challenge: Challenge, scenario: str, provider: str) -> None:
    complete = challenge.function("complete", asynchronous=True)
    talk = challenge.dialogue(scenario, provider, mode="async")
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_answer(outcome, bound=5)
    talk.expect_concurrent()


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("scenario", ["single_call", "multi_step"])
def test_finishes_the_task(challenge: Challenge, scenario: str, provider: str) -> None:
    complete = challenge.function("complete", asynchronous=True)
    talk = challenge.dialogue(scenario, provider, mode="async")
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_answer(outcome, bound=5)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_failing_call_becomes_an_error_result(challenge: Challenge, provider: str) -> None:
    """One call of the turn raises: it goes back as an error result, the others as their outputs."""
    complete = challenge.function("complete", asynchronous=True)
    failing = {"get_weather(city='Tokyo')": "weather service: Tokyo did not answer"}
    talk = challenge.dialogue("parallel_calls", provider, mode="async", failing=failing)
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_answer(outcome, bound=5)
    talk.expect_concurrent()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_refused_request_reaches_the_caller(challenge: Challenge, provider: str) -> None:
    """The provider refuses request 2 (the conversation is too long): that error is not a tool's."""
    complete = challenge.function("complete", asynchronous=True)
    talk = challenge.dialogue("parallel_calls", provider, mode="async", refuse=2)
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_provider_error_raised(outcome)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_raises_once_the_bound_is_hit(challenge: Challenge, provider: str) -> None:
    complete = challenge.function("complete", asynchronous=True)
    talk = challenge.dialogue("runaway", provider, mode="async")
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_gave_up(outcome, bound=5)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_any_task_runs_each_turn_concurrently(challenge: Challenge, provider: str) -> None:
    """Generated: up to three rounds of 0 to 8 calls each, any tool names and arguments."""
    complete = challenge.function("complete", asynchronous=True)

    @GRADING
    @given(scenario=tasks(rounds=(0, 3), calls=(0, 8)))
    def check(scenario: Scenario) -> None:
        talk = challenge.dialogue(scenario, provider, mode="async")
        outcome = talk.call(complete, talk.client, talk.request, talk.run)
        talk.expect_answer(outcome, bound=5)
        talk.expect_concurrent()

    check()
