"""Grading for 09_keep_the_whole_turn: against a reasoning model, complete() sends every turn back
whole, streamed or not, and collect_stream() keeps the reasoning a stream carried. skyl's own
collector is taken away for these tests."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox import Scenario
from sandbox.grading import GRADING, PROVIDERS, Challenge, Dialogue, take_away_collect_stream, tasks


@pytest.fixture(autouse=True)
def _write_your_own(monkeypatch: pytest.MonkeyPatch) -> None:
    take_away_collect_stream(monkeypatch)


def thinking(talk: Dialogue) -> Dialogue:
    """Ask the model to show its reasoning: Anthropic sends thinking blocks only when asked."""
    talk.request.reasoning = True
    return talk


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("stream", "scenario"),
    [
        (False, "multi_step_reasoning"),
        (True, "multi_step_reasoning"),
        (True, "parallel_calls_reasoning"),
        (True, "single_call_reasoning"),
    ],
    ids=lambda value: {False: "complete", True: "stream"}.get(value, value),
)
def test_complete_keeps_the_whole_turn(challenge: Challenge, stream: bool, scenario: str, provider: str) -> None:
    complete = challenge.function("complete")
    talk = thinking(challenge.dialogue(scenario, provider))
    outcome = talk.call(complete, talk.client, talk.request, talk.run, stream)
    talk.expect_answer(outcome, bound=5)
    if stream:
        talk.expect_streamed()


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("scenario", ["multi_step_reasoning", "single_call_reasoning"])
def test_collect_stream_keeps_the_reasoning(challenge: Challenge, scenario: str, provider: str) -> None:
    """The first turn: reasoning and a call, then reasoning, text and a call."""
    collect_stream = challenge.function("collect_stream")
    talk = thinking(challenge.dialogue(scenario, provider))
    stream = talk.stream_for()
    outcome = talk.call(collect_stream, stream)
    talk.expect_rebuilt(outcome, stream)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_complete_is_still_bounded(challenge: Challenge, provider: str) -> None:
    complete = challenge.function("complete")
    talk = thinking(challenge.dialogue("runaway_reasoning", provider))
    outcome = talk.call(complete, talk.client, talk.request, talk.run, True)
    talk.expect_gave_up(outcome, bound=5)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_complete_keeps_any_reasoning_task_whole(challenge: Challenge, provider: str) -> None:
    """Generated: up to three rounds of 0 to 5 calls each, every turn reasoned, streamed or not."""
    complete = challenge.function("complete")

    @GRADING
    @given(
        scenario=tasks(rounds=(1, 3), calls=(0, 5)).map(lambda task: task.with_reasoning(task.name)),
        stream=st.booleans(),
    )
    def check(scenario: Scenario, stream: bool) -> None:
        talk = thinking(challenge.dialogue(scenario, provider))
        outcome = talk.call(complete, talk.client, talk.request, talk.run, stream)
        talk.expect_answer(outcome, bound=5)

    check()
