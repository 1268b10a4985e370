"""Running learner code under a deadline: values, errors, coroutines, and hangs that stop."""

from __future__ import annotations

import threading
import time

import pytest

from sandbox.grading._challenge import Deadlines
from sandbox.grading._runner import TimedOut, call_with_deadline


def test_returns_the_value_or_the_error() -> None:
    assert call_with_deadline(lambda x: x * 2, (21,), 1).value == 42
    outcome = call_with_deadline(lambda: 1 / 0, (), 1)
    assert isinstance(outcome.error, ZeroDivisionError) and outcome.value is None


def test_awaits_a_coroutine_in_its_own_loop() -> None:
    async def double(x: int) -> int:
        return x * 2

    assert call_with_deadline(double, (4,), 1).value == 8


def test_a_busy_loop_times_out_and_its_thread_stops() -> None:
    def spin() -> None:
        while True:
            pass

    before = threading.active_count()
    with pytest.raises(TimedOut):
        call_with_deadline(spin, (), 0.2)
    deadline = time.monotonic() + 5
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() == before


def test_after_a_hang_the_rest_of_that_challenge_gets_a_short_deadline() -> None:
    deadlines = Deadlines(5.0)
    deadlines.record_hang("02_bounded_loop")
    assert deadlines.for_challenge("02_bounded_loop") == 0.5
    assert deadlines.for_challenge("03_several_calls") == 5.0
