"""Grading for 05_streaming: your collect_stream() rebuilds the turn a stream carried, and complete()
streams every turn. skyl's own collector is taken away for these tests."""

from __future__ import annotations

import pytest
from hypothesis import given

from sandbox import Scenario
from sandbox.grading import GRADING, PROVIDERS, Challenge, take_away_collect_stream, tasks


@pytest.fixture(autouse=True)
def _write_your_own(monkeypatch: pytest.MonkeyPatch) -> None:
    take_away_collect_stream(monkeypatch)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    "scenario",
    ["plain_text", "single_call", "parallel_calls", "no_arguments", "json_arguments", "stop_reason_mismatch"],
)
def test_collect_stream_rebuilds_the_turn(challenge: Challenge, scenario: str, provider: str) -> None:
    collect_stream = challenge.function("collect_stream")
    talk = challenge.dialogue(scenario, provider)
    stream = talk.stream_for()
    outcome = talk.call(collect_stream, stream)
    talk.expect_rebuilt(outcome, stream)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("scenario", ["single_call", "parallel_calls", "no_arguments", "json_arguments", "multi_step"])
def test_complete_streams_every_turn(challenge: Challenge, scenario: str, provider: str) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue(scenario, provider)
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_answer(outcome, bound=5)
    talk.expect_streamed()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_complete_is_still_bounded(challenge: Challenge, provider: str) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue("runaway", provider)
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_gave_up(outcome, bound=5)
    talk.expect_streamed()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_collect_stream_rebuilds_any_turn(challenge: Challenge, provider: str) -> None:
    """Generated: a turn of 0 to 8 calls, its arguments split into fragments, with any stop reason."""
    collect_stream = challenge.function("collect_stream")

    @GRADING
    @given(scenario=tasks(rounds=(1, 1), calls=(0, 8), stop=True))
    def check(scenario: Scenario) -> None:
        talk = challenge.dialogue(scenario, provider)
        stream = talk.stream_for()
        outcome = talk.call(collect_stream, stream)
        talk.expect_rebuilt(outcome, stream)

    check()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_complete_streams_any_task(challenge: Challenge, provider: str) -> None:
    """Generated: up to three rounds of 0 to 8 calls each, every turn streamed."""
    complete = challenge.function("complete")

    @GRADING
    @given(scenario=tasks(rounds=(0, 3), calls=(0, 8)))
    def check(scenario: Scenario) -> None:
        talk = challenge.dialogue(scenario, provider)
        outcome = talk.call(complete, talk.client, talk.request, talk.run)
        talk.expect_answer(outcome, bound=5)
        talk.expect_streamed()

    check()
