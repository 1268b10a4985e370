"""The GRADING settings draw a property's examples once per run and replay them on the other wire formats
(sandbox/grading/judge/_drawn.py): the same examples in the same order, never for a body that draws
itself, and never an example something changed after it was drawn."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox.grading import GRADING
from sandbox.grading.judge import _drawn

PROVIDERS = ("openai", "openai-responses", "anthropic", "gemini")


@pytest.fixture(autouse=True)
def _nothing_kept() -> None:
    _drawn._DRAWN.clear()


def _counted(draws: list[int]) -> st.SearchStrategy[dict[str, Any]]:
    def build(number: int) -> dict[str, Any]:
        draws.append(number)
        return {"number": number, "calls": [number]}

    return st.builds(build, st.integers(0, 10**6))


def _grade(strategy: st.SearchStrategy[dict[str, Any]], seen: list[tuple[str, Any]], provider: str) -> None:
    """As a grading test runs its property, once per provider: the same function, the same strategies."""

    @GRADING
    @given(example=strategy)
    def check(example: dict[str, Any]) -> None:
        seen.append((provider, repr(example)))

    check()


def test_a_property_graded_on_four_formats_is_drawn_once_and_replayed_in_order() -> None:
    draws: list[int] = []
    strategy = _counted(draws)
    seen: list[tuple[str, Any]] = []
    for provider in PROVIDERS:
        _grade(strategy, seen, provider)
    first = [example for provider, example in seen if provider == "openai"]
    assert len(first) >= 2 and len(draws) == len(first)  # drawn for the first format only
    for provider in PROVIDERS[1:]:
        assert [example for seen_on, example in seen if seen_on == provider] == first


def test_replayed_examples_are_the_ones_hypothesis_draws() -> None:
    strategy = _counted([])
    replayed: list[tuple[str, Any]] = []
    for provider in PROVIDERS[:2]:
        _grade(strategy, replayed, provider)
    _drawn._DRAWN.clear()
    drawn: list[tuple[str, Any]] = []
    _grade(strategy, drawn, "anthropic")
    assert [example for provider, example in replayed if provider == "openai-responses"] == [e for _, e in drawn]


def test_a_failing_run_is_not_kept_and_the_next_format_draws_again() -> None:
    draws: list[int] = []
    strategy = _counted(draws)

    @GRADING
    @given(example=strategy)
    def failing(example: dict[str, Any]) -> None:
        pytest.fail("the learner's loop failed here", pytrace=False)

    with pytest.raises(pytest.fail.Exception, match="the learner's loop failed here"):
        failing()
    before = len(draws)
    _grade(strategy, [], "openai")
    assert len(draws) > before


def test_a_failure_on_a_replayed_example_fails_the_property_with_its_message() -> None:
    strategy = _counted([])
    calls: list[int] = []

    def graded_on(provider: str) -> None:
        @GRADING
        @given(example=strategy)
        def check(example: dict[str, Any]) -> None:
            calls.append(example["number"])
            if provider == "gemini":
                pytest.fail(f"wrong on {provider}", pytrace=False)

        check()

    graded_on("anthropic")  # drawn, and passes
    calls.clear()
    with pytest.raises(pytest.fail.Exception, match="wrong on gemini"):
        graded_on("gemini")
    assert len(calls) == 1  # replayed: the first example failed, and the property stopped there


def test_an_example_changed_after_it_was_drawn_is_never_replayed() -> None:
    draws: list[int] = []
    strategy = _counted(draws)
    kept: list[dict[str, Any]] = []

    def graded(change: bool) -> list[str]:
        seen: list[str] = []

        @GRADING
        @given(example=strategy)
        def check(example: dict[str, Any]) -> None:
            seen.append(repr(example))
            kept.append(example)
            if change:
                example["calls"].append("changed by the test that ran it")

        check()
        return seen

    first = graded(change=True)
    drawn = len(draws)
    second = graded(change=False)
    assert len(draws) > drawn  # drawn afresh
    assert second == first  # and what the test gets is the example as drawn, not as changed


def test_a_body_that_draws_itself_is_drawn_every_time() -> None:
    draws: list[int] = []
    strategy = _counted(draws)

    def graded() -> None:
        @GRADING
        @given(example=strategy, data=st.data())
        def check(example: dict[str, Any], data: st.DataObject) -> None:
            data.draw(st.booleans())

        check()

    graded()
    once = len(draws)
    graded()
    assert len(draws) == 2 * once
