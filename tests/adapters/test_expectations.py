"""Strict expectations: `sandbox_mock` (strict unless marked otherwise) and `sandbox.mock(strict=True)`
fail on unplayed steps and unmatched requests, naming them; an official SDK drives the loops."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

import sandbox
from tests.sdk_drivers import openai_chat

pytest_plugins = ["pytester"]

pytestmark = pytest.mark.slow

TESTS = """
import openai
import pytest

from tests.sdk_drivers import openai_chat


def stop_after_first_call(model):
    client = openai.OpenAI(api_key="sk-test", max_retries=0)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}], tools=tools)


def test_whole_loop_passes(sandbox_mock):
    assert "Paris" in openai_chat("single_call")


def test_loop_stopped_early(sandbox_mock):
    stop_after_first_call("single_call")


@pytest.mark.sandbox("single_call")
def test_never_asked(sandbox_mock):
    pass


@pytest.mark.sandbox(echo="strict")
def test_refused_request(sandbox_mock):
    client = openai.OpenAI(api_key="sk-test", max_retries=0)
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="single_call", messages=[{"role": "user", "content": "hi"}])


@pytest.mark.sandbox(strict=False)
def test_not_strict(sandbox_mock):
    stop_after_first_call("single_call")
"""


def test_sandbox_mock_is_strict_by_default_and_names_what_was_unmet(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_strict=TESTS)
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))  # tests.sdk_drivers
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=5, errors=3)
    result.stdout.fnmatch_lines_random(
        [
            "*ERROR at teardown of test_loop_stopped_early*",
            "*- scenario 'single_call': step 1 of 2 never played (the last request reached step 0)*",
            "*- scenario 'single_call': none of its 2 steps played (no request reached it)*",
            "*- request #1 POST /v1/chat/completions matched no step: 400 missing_tool: *",
            "*@pytest.mark.sandbox(strict=False)*",
        ]
    )


def test_mock_strict_raises_on_exit_naming_the_unplayed_steps() -> None:
    with pytest.raises(AssertionError, match=r"scenario 'single_call': step 1 of 2 never played"):
        with sandbox.mock("single_call", strict=True):
            client = openai.OpenAI(api_key="sk-test", max_retries=0)
            tools: list = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
            client.chat.completions.create(model="x", messages=[{"role": "user", "content": "hi"}], tools=tools)


def test_mock_strict_passes_a_whole_loop_and_keeps_the_block_error() -> None:
    with sandbox.mock(strict=True) as mounted:
        openai_chat("parallel_calls")
    assert mounted.unmet() == []
    with pytest.raises(KeyError), sandbox.mock("single_call", strict=True):
        raise KeyError("the block's own error is not masked")


def test_mock_strict_has_clear_error() -> None:
    with pytest.raises(sandbox.UsageError, match=r"strict='yes': use True or False"):
        sandbox.mock(strict="yes")  # type: ignore[arg-type]
