"""One mistake, shown once: the terminal groups failures that report the same mistake, while JUnit XML and
--report keep every failure in full."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.grading.judge._feedback import mistake_of
from sandbox.grading.judge._grouping import group_failures, same_mistake_lines

pytest_plugins = ["pytester"]

GRADING_TEST = """
import pytest
from sandbox.grading import PROVIDERS, Challenge

@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("scenario", ["single_call", "parallel_calls"])
def test_finishes(challenge: Challenge, scenario: str, provider: str) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue(scenario, provider)
    talk.expect_answer(talk.call(complete, talk.client, talk.request, talk.run), bound=5)

@pytest.mark.parametrize("provider", PROVIDERS)
def test_multi_step(challenge: Challenge, provider: str) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue("multi_step", provider)
    talk.expect_answer(talk.call(complete, talk.client, talk.request, talk.run), bound=5)
"""

TEXT_TURN = """
from sandbox import skyl

def complete(client, req, run):
    for _ in range(5):
        resp = client.complete(req)
        if not resp.tool_calls():
            return resp
        req.messages.append(skyl.assistant_text(resp.text()))
        for call in resp.tool_calls():
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError("gave up")
"""

# Two mistakes: Gemini gets None back; every other format gets the text-only turn.
TWO_MISTAKES = TEXT_TURN.replace(
    "    for _ in range(5):", "    if client.provider == 'gemini':\n        return None\n    for _ in range(5):"
)


def failures(out: str) -> str:
    """The terminal's FAILURES section: the short summary after it names each failure by its headline."""
    return out.partition("short test summary info")[0]


def test_the_short_summary_gives_each_failure_its_headline_alone_even_on_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On CI pytest prints a failure's whole crash message in the short summary: the whole transcript
    again, unless the grouping gives it the headline."""
    monkeypatch.setenv("CI", "true")
    make_course(pytester, TWO_MISTAKES)
    out = pytester.runpytest("challenges").stdout.str()
    summary = out.partition("short test summary info")[2]
    assert "Conversation as sent in request" not in summary
    assert re.findall(r"^FAILED \S+ - (.*)$", summary, re.MULTILINE) == [
        "complete() on scenario 'single_call' on openai: the provider rejected request 2 of 2.",
        "complete() returned None (NoneType); it should return a skyl.Response (the one the model sent last, "
        "whose tool_calls() is empty).",
    ]


@pytest.fixture(autouse=True)
def _strict_inner_runs(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\naddopts = -p no:hypothesispytest -p no:cacheprovider\n"
        "filterwarnings =\n    error\n    ignore::pytest.PytestAssertRewriteWarning\n"
    )


def make_course(pytester: pytest.Pytester, exercise: str) -> Path:
    folder = pytester.mkdir("challenges") / "01_loop"
    folder.mkdir()
    (folder / "test_loop.py").write_text(GRADING_TEST)
    (folder / "exercise.py").write_text(exercise)
    return folder


def test_one_mistake_prints_one_full_failure_and_a_line_per_other_test(pytester: pytest.Pytester) -> None:
    make_course(pytester, TEXT_TURN)
    result = pytester.runpytest("challenges")
    result.assert_outcomes(failed=12)
    out = result.stdout.str()
    assert failures(out).count("Conversation as sent in request") == 1
    assert out.count("Rule: Append resp.message before any tool result") == 1
    result.stdout.fnmatch_lines(
        [
            "The same mistake in 11 more tests (each in full in --report and --junitxml):",
            "  test_finishes: single_call, parallel_calls on openai, openai-responses, anthropic, gemini",
            "  test_multi_step on openai, openai-responses, anthropic, gemini",
            "*= challenges =*",
        ]
    )
    assert len(re.findall(r"^FAILED ", out, re.MULTILINE)) == 1, "the short summary names the mistake once"
    result.stdout.fnmatch_lines(["*= 12 failed in *"])


def test_junitxml_and_the_report_keep_every_failure_in_full(pytester: pytest.Pytester) -> None:
    make_course(pytester, TEXT_TURN)
    pytester.runpytest("challenges", "--junitxml", "junit.xml", "--report", "results.json")
    xml = (pytester.path / "junit.xml").read_text()
    assert xml.count("Rule: Append resp.message before any tool result") == 12
    assert "The same mistake" not in xml
    tests = json.loads((pytester.path / "results.json").read_text())["tests"]
    assert all("Rule: Append resp.message before any tool result" in test["output"] for test in tests)


def test_different_mistakes_are_each_shown_in_full(pytester: pytest.Pytester) -> None:
    make_course(pytester, TWO_MISTAKES)
    result = pytester.runpytest("challenges")
    result.assert_outcomes(failed=12)
    out = result.stdout.str()
    assert failures(out).count("Conversation as sent in request") == 1
    assert failures(out).count("returned None (NoneType); it should return a skyl.Response") == 1
    result.stdout.fnmatch_lines(
        ["The same mistake in 8 more tests*", "The same mistake in 2 more tests*", "  test_multi_step on gemini"]
    )


def test_a_single_failure_is_shown_as_it_is(pytester: pytest.Pytester) -> None:
    make_course(pytester, TEXT_TURN)
    result = pytester.runpytest("challenges", "-k", "multi_step and anthropic")
    result.assert_outcomes(failed=1, deselected=11)
    result.stdout.no_fnmatch_line("*The same mistake*")


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (
            "complete() on scenario 'single_call' on openai: the provider rejected request 2 of 2.",
            "complete() on scenario 'multi_step' on gemini: the provider rejected request 3 of 3.",
        ),
        (
            'the result for get_weather(city=\'Paris\') [call_abc123] is "24C", but run(call) returned "18C"',
            'the result for get_time(city=\'Tokyo\') [toolu_01XyZ] is "x", but run(call) returned "21:30"',
        ),
    ],
    ids=["rejection", "wrong-output"],
)
def test_the_same_mistake_on_other_cases_has_one_key(one: str, other: str) -> None:
    assert mistake_of(one, "rule") == mistake_of(other, "rule")


def test_different_mistakes_have_different_keys() -> None:
    returned_none = "complete() on scenario 'single_call' on openai returned None (NoneType); it should return"
    no_request = "complete() returned without asking the model anything."
    assert mistake_of(returned_none, "") != mistake_of(no_request, "")
    assert mistake_of(no_request, "one rule") != mistake_of(no_request, "another rule")


def test_other_cases_are_one_line_per_test_function() -> None:
    lines = same_mistake_lines(
        [
            "challenges/02_x/test_x.py::test_runaway[runaway-openai-responses]",
            "challenges/02_x/test_x.py::test_runaway[six_rounds-gemini]",
            "challenges/02_x/test_x.py::test_any[openai]",
        ]
    )
    assert lines == [
        "The same mistake in 3 more tests (each in full in --report and --junitxml):",
        "  test_runaway: runaway, six_rounds on openai-responses, gemini",
        "  test_any on openai",
    ]


@pytest.mark.slow
def test_check_8_with_an_unawaited_client_fits_on_a_screen(tmp_path: Path) -> None:
    """The issue's case: one missing `await` fails all 32 of 08's tests, shown in under 60 lines."""
    root = Path(__file__).resolve().parents[2]
    shutil.copytree(root / "challenges", tmp_path / "challenges", ignore=shutil.ignore_patterns(".sandbox-state*"))
    shutil.copyfile(
        root / "tests" / "mutants" / "08_client_not_awaited" / "08_async.py",
        tmp_path / "challenges" / "08_async" / "exercise.py",
    )
    done = subprocess.run(
        [sys.executable, "-m", "sandbox", "check", "8"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert len(out.splitlines()) < 60, out
    assert failures(out).count("called client.complete(req) without awaiting it") == 1, out
    for noise in ("ExceptionGroup", "ERROR at", "RuntimeWarning", "never awaited", "During handling"):
        assert noise not in out, out
    assert "32 failed in" in out.splitlines()[-1], out


def test_a_programs_failures_are_grouped_by_mistake_within_their_challenge() -> None:
    """`sandbox grade` prints the first case of each mistake in full and names the others, as pytest does."""
    retry = "Rule: Retry a 429, 529 or 503 after the provider's hint."
    failures = [
        ("10_retry", "10_retry::retries[multi_step-openai]", f"sent request 5 again before the 300 ms\n\n{retry}"),
        ("10_retry", "10_retry::retries[multi_step-anthropic]", f"sent request 4 again before the 300 ms\n\n{retry}"),
        ("10_retry", "10_retry::gives_up[multi_step-openai]", "sent one request 11 times\n\nRule: Give up."),
        ("07_failing", "07_failing::refused[multi_step-openai]", f"sent request 5 again before the 300 ms\n\n{retry}"),
    ]
    grouped = group_failures(failures)
    assert [(first, others) for first, _, others in grouped] == [
        ("10_retry::retries[multi_step-openai]", ["10_retry::retries[multi_step-anthropic]"]),
        ("10_retry::gives_up[multi_step-openai]", []),
        ("07_failing::refused[multi_step-openai]", []),
    ]


def test_the_same_mistake_lines_keep_within_the_width() -> None:
    nodeids = [f"10_retry::case_{n}[scenario_with_a_long_name_{n}-openai-responses]" for n in range(12)]
    lines = same_mistake_lines(nodeids, width=60)
    assert lines[0].startswith("The same mistake in 12 more tests")
    assert all(len(line) <= 60 for line in lines), lines
