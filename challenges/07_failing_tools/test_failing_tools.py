"""Grading for 07_failing_tools: a tool that fails, raises or does not exist still gets a result,
marked as an error, and the loop goes on to the model's answer."""

from __future__ import annotations

import pytest

from sandbox.grading import PROVIDERS, Challenge


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
def test_an_unknown_tool_becomes_an_error_result(challenge: Challenge, provider: str) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue("parallel_calls", provider, unknown_tools={"get_time"})
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_answer(outcome, bound=5)
