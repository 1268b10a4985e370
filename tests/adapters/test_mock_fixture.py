"""`sandbox_mock`: the pytest fixture that mounts the sandbox for one test."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

pytest_plugins = ["pytester"]

TESTS = """
import httpx
import pytest

def ask(model):
    reply = httpx.post(
        "https://api.openai.com/v1/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": "hi"}]},
    )
    return reply.status_code, reply.json()

def test_model_picks_the_scenario(sandbox_mock):
    status, body = ask("plain_text")
    assert (status, body["choices"][0]["message"]["content"]) == (200, "Hello! No tools needed for that.")
    assert len(sandbox_mock.journal) == 1

@pytest.mark.sandbox("plain_text")
def test_marker_pins_a_scenario(sandbox_mock):
    assert ask("gpt-4o")[0] == 200

@pytest.mark.sandbox(scenario="single_call", budget=1, echo="strict", strict=False)
def test_marker_sets_the_budget_and_the_echo(sandbox_mock):
    assert ask("x")[0] == 400  # single_call needs tools: the strict echo says so
    assert sandbox_mock.journal.last.error.rule.value == "missing_tool"

@pytest.mark.sandbox("plain_text", faults="rate_limit@1:retry_after=0")
def test_marker_scripts_a_fault(sandbox_mock):
    status, body = ask("x")
    assert (status, body["error"]["code"]) == (429, "rate_limit_exceeded")
    assert ask("x")[0] == 200  # the same request again: the fault played once
    assert [exchange.status for exchange in sandbox_mock.journal] == [429, 200]

def test_unmounted_after_the_test():
    with pytest.raises(httpx.ConnectError):
        httpx.post("http://127.0.0.1:9/v1/chat/completions", json={}, timeout=1)
"""


def test_sandbox_mock_fixture_mounts_pins_and_unmounts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_fixture=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=5)


def test_sandbox_marker_with_a_bad_argument_has_clear_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="""
import pytest

@pytest.mark.sandbox(scenarios="single_call")
def test_it(sandbox_mock):
    pass
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*unknown argument 'scenarios'; it takes scenario=, budget=, faults=, echo= and strict=*"]
    )


def test_sandbox_marker_with_a_bad_fault_has_clear_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="""
import pytest

@pytest.mark.sandbox(faults="rate_limit@99")
def test_it(sandbox_mock):
    pass
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*@pytest.mark.sandbox: faults= Fault('rate_limit', request=99): request=99 is past*"])
