"""Grading for 10_retry_without_repeating: the loop retries what the provider asks it to retry, after
its hint and a few times at most, never a 400, and every retry sends the same conversation again.
Faults are scripted (`sandbox.engine.faults`) with hints of 30 ms, so a test waits tens of milliseconds."""

from __future__ import annotations

import pytest

from sandbox import Fault
from sandbox.grading import PROVIDERS, Challenge

HINT = 0.03
FAULTED = (
    Fault("rate_limit", request=2, retry_after=HINT),
    Fault("overloaded", request=3, retry_after=HINT),
    Fault("rate_limit", request=4, retry_after=HINT),
)
"""Three hints to wait: a loop that does not wait is refused again if any of its retries comes early,
however busy the machine is while it runs the others."""
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
    talk = challenge.dialogue("single_call", provider, faults=[Fault("server_error", request=1, status=503)])
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


@pytest.mark.parametrize("provider", PROVIDERS)
def test_never_retries_a_400(challenge: Challenge, provider: str) -> None:
    """The provider refuses request 2 as too long: that error reaches the caller, sent once."""
    complete = challenge.function("complete")
    talk = challenge.dialogue("multi_step", provider, refuse=2)
    outcome = talk.call(complete, talk.client, talk.request, talk.run, False)
    talk.expect_provider_error_raised(outcome)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_gives_up_with_an_error_that_says_why(challenge: Challenge, provider: str) -> None:
    """The provider stays overloaded: retry, then raise an error naming the status and the attempts."""
    complete = challenge.function("complete")
    faults = [Fault("overloaded", request=2, times=10, retry_after=0.01)]
    talk = challenge.dialogue("multi_step", provider, faults=faults)
    outcome = talk.call(complete, talk.client, talk.request, talk.run, False)
    talk.expect_retries_exhausted(outcome)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_is_still_bounded(challenge: Challenge, provider: str) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue("runaway", provider)
    outcome = talk.call(complete, talk.client, talk.request, talk.run, False)
    talk.expect_gave_up(outcome, bound=5)
