"""Grading for 03_several_calls: the assistant turn once per turn, then every call's own result, in order."""

from __future__ import annotations

import pytest
from hypothesis import given

from sandbox import Scenario
from sandbox.grading import GRADING, PROVIDERS, Challenge, tasks


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("scenario", ["parallel_calls", "parallel_rounds", "multi_step"])
def test_answers_every_call_of_every_turn_in_order(challenge: Challenge, scenario: str, provider: str) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue(scenario, provider)
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
def test_any_number_of_calls_in_any_turn(challenge: Challenge, provider: str) -> None:
    """Generated: up to three rounds of 0 to 8 calls each, any tool names and arguments."""
    complete = challenge.function("complete")

    @GRADING
    @given(scenario=tasks(rounds=(0, 3), calls=(0, 8)))
    def check(scenario: Scenario) -> None:
        talk = challenge.dialogue(scenario, provider)
        outcome = talk.call(complete, talk.client, talk.request, talk.run)
        talk.expect_answer(outcome, bound=5)

    check()
