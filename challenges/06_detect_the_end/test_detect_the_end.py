"""Grading for 06_detect_the_end: the loop ends exactly when the call list is empty, whatever the stop
reason says (scenario stop_reason_mismatch lies in both directions)."""

from __future__ import annotations

import pytest

from sandbox.grading import PROVIDERS, Challenge


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("scenario", ["stop_reason_mismatch", "plain_text", "single_call"])
def test_ends_when_the_call_list_is_empty(challenge: Challenge, scenario: str, provider: str) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue(scenario, provider)
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_answer(outcome, bound=5)
