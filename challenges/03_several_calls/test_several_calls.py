"""Grading for 03_several_calls: the assistant turn once per turn, then every call's own result, in order."""

from __future__ import annotations

import pytest

from sandbox.grading import PROVIDERS, Challenge


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("scenario", ["parallel_calls", "parallel_rounds", "multi_step"])
def test_answers_every_call_of_every_turn_in_order(challenge: Challenge, scenario: str, provider: str) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue(scenario, provider)
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_answer(outcome, bound=5)
