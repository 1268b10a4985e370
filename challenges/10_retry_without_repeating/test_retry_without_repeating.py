"""Grading for 10_retry_without_repeating: the loop retries what the provider asks it to retry, after
its hint and a few times at most, never any other error, and every retry sends the same conversation again.
Faults are scripted (`sandbox.engine.faults`) with hints from 40 to 500 ms, each different, so a loop that
sleeps a fixed time, or reads the hint in the wrong unit, is refused again."""

from __future__ import annotations

import pytest

from sandbox import Fault
from sandbox.grading import PROVIDERS, Challenge

FAULTED = (
    Fault("rate_limit", request=2, retry_after=0.04),
    Fault("overloaded", request=3, retry_after=0.3),
    Fault("rate_limit", request=4, retry_after=0.1),
)
"""Three hints to wait, each different: a loop that does not wait, or waits a fixed time shorter than
300 ms, is refused again when a retry comes early, however busy the machine is while it runs the others."""
LONG_HINT = 0.5
"""The 503's hint: a loop that sleeps a fixed few hundred milliseconds comes back too early."""
REFUSALS = (401, 403, 404)
"""Statuses besides the 400 that no retry fixes: a key, a permission, a model the provider refuses."""
CALL_COMPLETE = {"openai": 16, "openai-responses": 19, "anthropic": 19}
"""Frames of request 2's stream after which its call is complete but the turn is not: a cut there
breaks an answer whose call a loop may already have run. (Gemini streams a call turn as one frame.)"""
MODES = pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])


@pytest.mark.parametrize("provider", PROVIDERS)
@MODES
def test_retries_a_rate_limit_and_an_overload(challenge: Challenge, provider: str, stream: bool) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue("multi_step", provider, faults=list(FAULTED))
    outcome = talk.call(complete, talk.client, talk.request, talk.run, stream)
    talk.expect_retried_answer(outcome, bound=5)
    if stream:
        talk.expect_streamed()


@pytest.mark.parametrize("provider", PROVIDERS)
@MODES
def test_retries_a_503(challenge: Challenge, provider: str, stream: bool) -> None:
    complete = challenge.function("complete")
    faults = [Fault("server_error", request=1, status=503, retry_after=LONG_HINT)]
    talk = challenge.dialogue("single_call", provider, faults=faults)
    outcome = talk.call(complete, talk.client, talk.request, talk.run, stream)
    talk.expect_retried_answer(outcome, bound=5)


@pytest.mark.parametrize("provider", PROVIDERS)
@MODES
def test_discards_an_answer_cut_before_its_end(challenge: Challenge, provider: str, stream: bool) -> None:
    """The connection breaks in the middle of request 2's answer: after 4 frames of a stream, or half of a
    JSON body. Gemini streams a call-only turn as one frame, which a cut breaks before any event arrives,
    so on Gemini the final answer, which comes in several, is cut too."""
    complete = challenge.function("complete")
    after = 4 if stream else 1
    faults = [Fault("cut", request=2, after=after), Fault("cut", request=4, after=after, provider="gemini")]
    talk = challenge.dialogue("multi_step", provider, faults=faults)
    outcome = talk.call(complete, talk.client, talk.request, talk.run, stream)
    talk.expect_retried_answer(outcome, bound=5)


@pytest.mark.parametrize("provider", CALL_COMPLETE)
def test_never_runs_a_tool_twice_when_a_stream_breaks_after_its_call(challenge: Challenge, provider: str) -> None:
    """The connection breaks after request 2's call is complete in the stream, before the turn ends: a loop
    that runs each call as its stream ends runs it again on the retry."""
    complete = challenge.function("complete")
    talk = challenge.dialogue("multi_step", provider, faults=[Fault("cut", request=2, after=CALL_COMPLETE[provider])])
    outcome = talk.call(complete, talk.client, talk.request, talk.run, True)
    talk.expect_retried_answer(outcome, bound=5)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_failing_tool_still_gets_a_result(challenge: Challenge, provider: str) -> None:
    """07's loop with retries: a tool that raises becomes an error result, with a rate limit on the way."""
    complete = challenge.function("complete")
    failing = {"get_weather(city='Pariss')": "weather service: no such city 'Pariss'"}
    faults = [Fault("rate_limit", request=2, retry_after=0.05)]
    talk = challenge.dialogue("tool_error_recovery", provider, failing=failing, faults=faults)
    outcome = talk.call(complete, talk.client, talk.request, talk.run, False)
    talk.expect_retried_answer(outcome, bound=5)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_never_retries_a_400(challenge: Challenge, provider: str) -> None:
    """The provider refuses request 2 as too long: that error reaches the caller, sent once."""
    complete = challenge.function("complete")
    talk = challenge.dialogue("multi_step", provider, refuse=2)
    outcome = talk.call(complete, talk.client, talk.request, talk.run, False)
    talk.expect_refusal_not_retried(outcome)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("status", REFUSALS)
def test_never_retries_any_other_refusal(challenge: Challenge, status: int, provider: str) -> None:
    """The provider refuses request 2 with a 401, 403 or 404, its own body: sent once, the error let through."""
    complete = challenge.function("complete")
    talk = challenge.dialogue("multi_step", provider, refuse=2, refuse_status=status)
    outcome = talk.call(complete, talk.client, talk.request, talk.run, False)
    talk.expect_refusal_not_retried(outcome)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_gives_up_with_an_error_that_says_why(challenge: Challenge, provider: str) -> None:
    """The provider stays overloaded: retry, then raise an error naming the status and the attempts."""
    complete = challenge.function("complete")
    faults = [Fault("overloaded", request=2, times=10, retry_after=0.01)]
    talk = challenge.dialogue("multi_step", provider, faults=faults)
    outcome = talk.call(complete, talk.client, talk.request, talk.run, False)
    talk.expect_retries_exhausted(outcome)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_gives_up_on_a_connection_that_keeps_breaking(challenge: Challenge, provider: str) -> None:
    """Every answer to request 2 breaks halfway: retry, then raise an error naming the attempts."""
    complete = challenge.function("complete")
    faults = [Fault("cut", request=2, times=10, after=1)]
    talk = challenge.dialogue("multi_step", provider, faults=faults)
    outcome = talk.call(complete, talk.client, talk.request, talk.run, False)
    talk.expect_retries_exhausted(outcome)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_is_still_bounded(challenge: Challenge, provider: str) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue("runaway", provider)
    outcome = talk.call(complete, talk.client, talk.request, talk.run, False)
    talk.expect_gave_up(outcome, bound=5)
