"""Grading for 08_async: each turn's calls run concurrently (every call of a turn must be in flight
before any returns), their results still follow in call order, and the loop stays bounded."""

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
