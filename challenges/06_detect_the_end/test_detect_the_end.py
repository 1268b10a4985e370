"""Grading for 06_detect_the_end: the loop ends exactly when the call list is empty, whatever the stop
reason says (scenario stop_reason_mismatch lies in both directions)."""

from __future__ import annotations

import pytest
from hypothesis import example, given

from sandbox import Call, Scenario, Step
from sandbox.grading import GRADING, PROVIDERS, Challenge, tasks
from sandbox.skyl import StopReason, Tool


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


# Explicit, so it is graded whatever the generator draws: turns with calls whose stop reasons say
# the model is done (each provider frames them in its own words).
EVERY_STOP_REASON = Scenario(
    "every_stop_reason",
    tools=[Tool("get_weather", "Current weather for a city.")],
    steps=[
        Step(calls=[Call("get_weather", {"city": "Oslo"})], stop=StopReason.REFUSAL),
        Step(calls=[Call("get_weather", {"city": "Lima"})], stop=StopReason.STOP_SEQUENCE),
        Step(calls=[Call("get_weather", {"city": "Kraków"})], stop=StopReason.END_TURN),
        Step(text="Oslo, Lima and Kraków: {results}.", stop=StopReason.TOOL_USE),
    ],
    prompt="Weather in Oslo, Lima and Kraków?",
    tool_outputs={
        "get_weather(city='Oslo')": "2C, sleet",
        "get_weather(city='Lima')": "19C, overcast",
        "get_weather(city='Kraków')": "8C, clear",
    },
)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_ends_on_the_call_list_whatever_the_stop_reason(challenge: Challenge, provider: str) -> None:
    """Generated: one to three rounds of 1 to 8 calls, each turn with a stop reason drawn at random; and
    refusal, stop sequence and end turn on turns that carry calls."""
    complete = challenge.function("complete")

    @GRADING
    @given(scenario=tasks(rounds=(1, 3), calls=(1, 8), stop=True))
    @example(scenario=EVERY_STOP_REASON)
    def check(scenario: Scenario) -> None:
        talk = challenge.dialogue(scenario, provider)
        outcome = talk.call(complete, talk.client, talk.request, talk.run)
        talk.expect_answer(outcome, bound=5)

    check()
