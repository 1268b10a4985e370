"""Grading for 04_report_runaway: at the bound, an error that names the bound and the calls, in order,
and says to check what those tools return. Any wording a person would accept passes."""

from __future__ import annotations

import pytest
from hypothesis import given

from sandbox import Scenario
from sandbox.grading import GRADING, PROVIDERS, Challenge, runaways


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("scenario", ["runaway", "runaway_empty", "six_rounds"])
def test_the_error_names_the_bound_and_the_calls(challenge: Challenge, scenario: str, provider: str) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue(scenario, provider)
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    error = talk.expect_gave_up(outcome, bound=5)
    talk.expect_runaway_report(error)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_legitimate_task_still_finishes(challenge: Challenge, provider: str) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue("multi_step", provider)
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_answer(outcome, bound=5)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_any_runaway_is_reported(challenge: Challenge, provider: str) -> None:
    """Generated: a runaway over 1 to 8 calls a turn of any tools; the error names them in order."""
    complete = challenge.function("complete")

    @GRADING
    @given(scenario=runaways())
    def check(scenario: Scenario) -> None:
        talk = challenge.dialogue(scenario, provider)
        outcome = talk.call(complete, talk.client, talk.request, talk.run)
        error = talk.expect_gave_up(outcome, bound=5)
        talk.expect_runaway_report(error)

    check()
