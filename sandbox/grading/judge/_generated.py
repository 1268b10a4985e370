"""Generated scenarios for grading: the shapes a loop must handle beyond the catalogue's hand-picked ones.

A grading test runs a property over them inside its body, once per wire format:

    @pytest.mark.parametrize("provider", PROVIDERS)
    def test_any_task(challenge: Challenge, provider: str) -> None:
        complete = challenge.function("complete")

        @GRADING
        @given(scenario=tasks(rounds=(0, 3)))
        def check(scenario: Scenario) -> None:
            talk = challenge.dialogue(scenario, provider)
            talk.expect_answer(talk.call(complete, talk.client, talk.request, talk.run), bound=5)

        check()

Grading must be reproducible and quick: `GRADING` draws the same examples on every run
(`derandomize`), keeps no database, and does not shrink (a learner's slow or hanging loop would
be run over and over). A failing example fails the test with the grader's own feedback, whose
transcript shows the generated conversation. The examples a property drew on its first wire format
are replayed on the others (`_drawn`): the same examples, drawn once.
"""

from __future__ import annotations

import dataclasses
import functools

from hypothesis import HealthCheck, Phase
from hypothesis import strategies as st

from ...engine._scenario import Scenario
from ...messages._types import StopReason
from ...strategies import plausible_arguments, plausible_tool_names, scenarios
from ._drawn import Grading

__all__ = ["EXAMPLES", "GRADING", "runaways", "tasks"]

EXAMPLES = 4
"""Examples per property and wire format: with four formats, 16 generated conversations a property."""

GRADING = Grading(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow],
)


def _named(scenario: Scenario, name: str) -> Scenario:
    """Readable in a transcript: `scenario 'generated_task_2_rounds' on openai`."""
    return dataclasses.replace(scenario, name=f"generated_{name}")


@functools.lru_cache(maxsize=64)
def _task_scenarios(rounds: tuple[int, int], calls: tuple[int, int], stop: bool) -> st.SearchStrategy[Scenario]:
    """One strategy object per shape, drawn from by every example: a fresh one is validated again on its
    first draw, which cost more than the drawing (the examples are the same either way)."""
    return scenarios(
        rounds=st.integers(*rounds),
        calls=st.integers(*calls),
        repeat=st.just("once"),
        call_arguments=plausible_arguments,
        stop=st.sampled_from(list(StopReason)) if stop else None,
        unique_calls=True,
        names=plausible_tool_names(),
    )


@functools.lru_cache(maxsize=64)
def _runaway_scenarios(calls: tuple[int, int]) -> st.SearchStrategy[Scenario]:
    return scenarios(
        rounds=st.just(1),
        calls=st.integers(*calls),
        repeat=st.just("forever"),
        call_arguments=plausible_arguments,
        unique_calls=True,
        names=plausible_tool_names(),
    )


@st.composite
def tasks(
    draw: st.DrawFn,
    *,
    rounds: tuple[int, int] = (1, 3),
    calls: tuple[int, int] = (0, 8),
    stop: bool = False,
) -> Scenario:
    """A legitimate task: `rounds` rounds of `calls` calls each (a round of 0 calls is the answer), then
    the answer. Every round moves on whatever the results say, so a correct loop needs at most
    `rounds[1] + 1` requests. Calls of one round are distinct, as graders key outputs by call.

    With `stop`, every turn reports a stop reason drawn at random, whatever its calls say.
    """
    scenario = draw(_task_scenarios(rounds, calls, stop))
    rounds_made = sum(1 for step in scenario.steps if step.calls)
    return _named(scenario, f"task_{rounds_made}_round{'s' if rounds_made != 1 else ''}")


@st.composite
def runaways(draw: st.DrawFn, *, calls: tuple[int, int] = (1, 8)) -> Scenario:
    """A model that asks for the same `calls` calls every turn, forever: only the loop's bound ends it."""
    scenario = draw(_runaway_scenarios(calls))
    count = len(scenario.steps[0].calls)
    return _named(scenario, f"runaway_{count}_call{'s' if count != 1 else ''}")
