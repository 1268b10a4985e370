"""Grading for 02_bounded_loop: loop until the call list is empty, and never more than 5 requests."""

from __future__ import annotations

import pytest
from hypothesis import given

from sandbox import Scenario
from sandbox.grading import GRADING, PROVIDERS, Challenge, runaways


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("scenario", ["single_call", "multi_step"])
def test_finishes_the_task_within_the_bound(challenge: Challenge, scenario: str, provider: str) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue(scenario, provider)
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_answer(outcome, bound=5)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("scenario", ["runaway", "six_rounds"])
def test_raises_once_the_bound_is_hit(challenge: Challenge, scenario: str, provider: str) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue(scenario, provider)
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_gave_up(outcome, bound=5)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_any_runaway_is_stopped_at_the_bound(challenge: Challenge, provider: str) -> None:
    """Generated: a model that asks for the same 1 to 8 calls of any tools every turn."""
    complete = challenge.function("complete")

    @GRADING
    @given(scenario=runaways())
    def check(scenario: Scenario) -> None:
        talk = challenge.dialogue(scenario, provider)
        outcome = talk.call(complete, talk.client, talk.request, talk.run)
        talk.expect_gave_up(outcome, bound=5)

    check()
