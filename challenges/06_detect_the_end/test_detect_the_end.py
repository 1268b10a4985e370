"""Grading for 06_detect_the_end: the loop ends exactly when the call list is empty, whatever the stop
reason says (scenario stop_reason_mismatch lies in both directions)."""

from __future__ import annotations

import pytest
from hypothesis import given

from sandbox import Scenario
from sandbox.grading import GRADING, PROVIDERS, Challenge, tasks


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("scenario", ["stop_reason_mismatch", "plain_text", "single_call"])
def test_ends_when_the_call_list_is_empty(challenge: Challenge, scenario: str, provider: str) -> None:
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
def test_ends_on_the_call_list_whatever_the_stop_reason(challenge: Challenge, provider: str) -> None:
    """Generated: up to three rounds of 0 to 8 calls, each turn with a stop reason drawn at random."""
    complete = challenge.function("complete")

    @GRADING
    @given(scenario=tasks(rounds=(0, 3), calls=(0, 8), stop=True))
    def check(scenario: Scenario) -> None:
        talk = challenge.dialogue(scenario, provider)
        outcome = talk.call(complete, talk.client, talk.request, talk.run)
        talk.expect_answer(outcome, bound=5)

    check()
