"""The public hypothesis strategies draw what they promise, and reject impossible options loudly."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

import sandbox
from sandbox import skyl
from sandbox import strategies as sst
from sandbox.engine._scenario import is_usable

QUICK = settings(max_examples=30, deadline=None, database=None)


@pytest.mark.slow
@QUICK
@given(sst.scenarios(rounds=st.integers(1, 3), calls=st.integers(0, 8), repeat=st.just("once"), unique_calls=True))
def test_scenarios_give_every_call_a_distinct_usable_output(scenario: sandbox.Scenario) -> None:
    keys = [repr(call) for step in scenario.steps for call in step.calls]
    assert set(keys) == set(scenario.tool_outputs)
    assert len(set(scenario.tool_outputs.values())) == len(scenario.tool_outputs)
    assert all(is_usable(output) for output in scenario.tool_outputs.values())
    assert scenario.prompt and scenario.steps[-1].is_answer
    for step in scenario.steps:
        assert len({repr(call) for call in step.calls}) == len(step.calls)


@pytest.mark.slow
@QUICK
@given(sst.scenarios(rounds=st.just(2), calls=st.just(3), stop=st.just(skyl.StopReason.REFUSAL)))
def test_scenarios_take_the_number_of_rounds_calls_and_stop_reasons_asked_for(scenario: sandbox.Scenario) -> None:
    assert [len(step.calls) for step in scenario.steps] == [3, 3, 0]
    assert {step.stop for step in scenario.steps} == {skyl.StopReason.REFUSAL}


@QUICK
@given(sst.scenarios(names=st.sampled_from(["get_weather", "get_time"])))
def test_scenarios_take_tool_names_from_the_strategy_given(scenario: sandbox.Scenario) -> None:
    assert {tool.name for tool in scenario.tools} <= {"get_weather", "get_time"}


@QUICK
@given(sst.scenarios(rounds=st.integers(0, 2), calls=st.integers(1, 4), repeat=st.just("once")), st.data())
def test_generated_scenarios_are_served_on_every_wire_format(scenario: sandbox.Scenario, data: st.DataObject) -> None:
    provider = data.draw(st.sampled_from(sandbox.PROVIDERS))
    client = skyl.Client(provider, transport=sandbox.transport(scenario))
    req = skyl.Request(model=scenario.name, messages=[skyl.user_text(scenario.prompt)], tools=list(scenario.tools))
    for _ in range(len(scenario.steps)):
        resp = client.complete(req)
        if not resp.tool_calls():
            break
        req.messages.append(resp.message)
        for call in resp.tool_calls():
            output = scenario.tool_outputs[repr(sandbox.Call(call.name, dict(call.arguments)))]
            req.messages.append(skyl.tool_result_message(call.id, output))
    assert not resp.tool_calls()


@pytest.mark.slow
@QUICK
@given(sst.tool_calls(min_size=0, max_size=8), st.data())
def test_result_maps_answer_only_the_calls_plus_strangers(calls: list[skyl.ToolCall], data: st.DataObject) -> None:
    results = data.draw(sst.result_maps(calls, outputs=lambda call: f"out:{call.id}"))
    ids = {call.id for call in calls}
    assert all(results[call_id] == f"out:{call_id}" for call_id in results.keys() & ids)
    assert all(stranger not in ids for stranger in results.keys() - ids)


@pytest.mark.slow
@QUICK
@given(sst.tool_calls(min_size=1, max_size=8), st.data())
def test_result_maps_without_missing_or_extra_answer_every_call_once(
    calls: list[skyl.ToolCall], data: st.DataObject
) -> None:
    results = data.draw(sst.result_maps(calls, missing=False, extra=False))
    assert set(results) == {call.id for call in calls}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("strategy", "match"),
    [
        (sst.scenarios(max_steps=0), "max_steps=0"),
        (sst.scenarios(rounds=st.just(1), calls=st.just(-1)), "calls drew -1"),
        (sst.result_maps([skyl.ToolCall("same", "a"), skyl.ToolCall("same", "b")]), "distinct ids"),
    ],
    ids=["no-steps", "negative-calls", "duplicate-ids"],
)
def test_impossible_options_have_clear_error(strategy: st.SearchStrategy[object], match: str) -> None:
    @given(strategy)
    def draw(value: object) -> None:
        pass

    with pytest.raises(InvalidArgument, match=match):
        draw()


@QUICK
@given(sst.scenarios(names=sst.plausible_tool_names(), call_arguments=sst.plausible_arguments, rounds=st.just(2)))
def test_plausible_scenarios_read_like_real_tool_calls(scenario: sandbox.Scenario) -> None:
    for step in scenario.steps:
        for call in step.calls:
            assert re.fullmatch(r"[a-z]+(_[a-z]+)+", call.name), call
            assert call.arguments, f"{call} has no arguments"
            for value in call.arguments.values():
                assert isinstance(value, int) or re.fullmatch(r"[\w .@'-]+", value), f"{call}: {value!r}"


def test_generated_grading_scenarios_are_named_as_the_readme_says() -> None:
    from sandbox.grading import runaways, tasks

    names: list[str] = []

    @settings(max_examples=10, derandomize=True, database=None)
    @given(st.one_of(tasks(rounds=(0, 3)), runaways()))
    def collect(scenario: sandbox.Scenario) -> None:
        names.append(scenario.name)

    collect()
    assert names and all(re.fullmatch(r"generated_(task|runaway)_\d+_(rounds?|calls?)", name) for name in names)
