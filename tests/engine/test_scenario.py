"""Scenarios as data: the catalogue, the TOML layout, the builder, and errors that say what to fix."""

from __future__ import annotations

from pathlib import Path

import pytest

import sandbox
from sandbox import Call, Scenario, ScenarioError, Step, is_usable
from sandbox.engine._scenario import render_text
from sandbox.skyl import Tool

REQUIRED = {
    "single_call",
    "parallel_calls",
    "multi_step",
    "six_rounds",
    "runaway",
    "runaway_empty",
    "tool_error_recovery",
    "stop_reason_mismatch",
    "plain_text",
}


def test_catalogue_has_every_scenario_the_lesson_needs() -> None:
    assert REQUIRED <= set(sandbox.catalogue())


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_catalogue_scenario_is_described_and_consistent(name: str) -> None:
    scenario = sandbox.get_scenario(name)
    assert len(scenario.description) > 80, "each scenario needs a one-paragraph description"
    assert scenario.prompt
    for step in scenario.steps:
        for call in step.calls:
            assert repr(call) in scenario.tool_outputs, f"{call!r} needs a tool output for replays"


def test_single_call_calls_get_weather_in_paris_then_answers() -> None:
    steps = sandbox.get_scenario("single_call").steps
    assert [tuple(step.calls) for step in steps] == [(Call("get_weather", {"city": "Paris"}),), ()]


def test_parallel_calls_makes_three_calls_in_one_turn() -> None:
    first = sandbox.get_scenario("parallel_calls").steps[0]
    assert [repr(call) for call in first.calls] == [
        "get_weather(city='Paris')",
        "get_weather(city='Tokyo')",
        "get_time(city='Tokyo')",
    ]


def test_six_rounds_uses_six_distinct_tools() -> None:
    steps = sandbox.get_scenario("six_rounds").steps
    names = [call.name for step in steps for call in step.calls]
    assert len(names) == 6 and len(set(names)) == 6


def test_runaway_repeats_forever() -> None:
    (step,) = sandbox.get_scenario("runaway").steps
    assert step.repeat == "forever"


def test_get_scenario_unknown_has_clear_error() -> None:
    with pytest.raises(ScenarioError, match=r"(?s)No scenario named .nope.*\n- single_call"):
        sandbox.get_scenario("nope")


@pytest.mark.parametrize(
    ("content", "is_error", "usable"),
    [
        ("18C, clear", False, True),
        ("", False, False),
        ("   ", False, False),
        ("ERROR: upstream returned 503", False, False),
        ("Traceback (most recent call last):", False, False),
        ("18C", True, False),
        ("No errors were found in the log", False, True),
    ],
)
def test_is_usable_reads_results_like_a_model(content: str, is_error: bool, usable: bool) -> None:
    assert is_usable(content, is_error=is_error) is usable


def test_render_text_quotes_results_and_keeps_unfillable_placeholders() -> None:
    text = render_text("A {last[0]}, B {last[1]}, C {last[7]}; all: {results}", ["x", "y"], ["x", "y"])
    assert text == 'A x, B y, C {last[7]}; all: "x"; "y"'


def test_builder_scenario_round_trips_through_engine_checks() -> None:
    scenario = Scenario(
        "lookup",
        tools=[Tool("lookup", "Look a word up.")],
        steps=[Step(calls=[Call("lookup", {"word": "loop"})]), Step(text="It means: {last[0]}")],
    )
    assert sandbox.Engine(scenario).pinned is scenario


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"steps": []}, "has no steps"),
        ({"steps": [Step(calls=[Call("nope")])], "tools": []}, "calls 'nope', which is not among its tools"),
        ({"steps": [Step(calls=[Call("t")])], "tools": [Tool("t")]}, "last step must be an answer"),
        ({"steps": [Step(text="hi", repeat="forever")]}, "only a step with calls can repeat"),
        ({"steps": [Step(calls=[Call("t")], repeat="always")], "tools": [Tool("t")]}, "repeat='always'"),
    ],
)
def test_invalid_scenario_has_clear_error(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        Scenario("broken", **kwargs)  # type: ignore[arg-type]


def test_scenario_name_must_be_usable_as_a_model_name() -> None:
    with pytest.raises(ScenarioError, match="name must match"):
        Scenario("has space", steps=[Step(text="hi")])


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("name = 'x'\n[[steps]]\ntext = 'hi'\nstop = 'done'\n", r"stop='done'; use one of"),
        ("name = 'x'\n[[steps]]\ntxt = 'hi'\n", r"unknown keys \['txt'\]"),
        ("name = 'x'\nsteps = 3\n", "'steps' must be a list"),
        ("steps = []\n", "'name' must be a non-empty string"),
        ("name = 'x\n", "not valid TOML"),
        ("name = 'x'\n[[tools]]\nname = 't'\nparameters = { type = 'string' }\n[[steps]]\ntext='a'\n", "JSON schema"),
    ],
)
def test_scenario_file_errors_name_the_file_and_the_fix(tmp_path: Path, toml: str, message: str) -> None:
    path = tmp_path / "broken.toml"
    path.write_text(toml)
    with pytest.raises(ScenarioError, match=message) as info:
        sandbox.load_scenario(path)
    assert "broken.toml" in str(info.value)


def test_missing_scenario_file_has_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="Cannot read scenario file"):
        sandbox.load_scenario(tmp_path / "absent.toml")


def test_load_scenarios_rejects_duplicate_names(tmp_path: Path) -> None:
    for file in ("a.toml", "b.toml"):
        (tmp_path / file).write_text("name = 'same'\n[[steps]]\ntext = 'hi'\n")
    with pytest.raises(ScenarioError, match="Two scenarios are named 'same'"):
        sandbox.load_scenarios([tmp_path])
