"""The pytest plugin, through pytester: verdicts, not started, hangs, crashes, the report, --impl."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

GRADING_TEST = """
import pytest
from sandbox.grading import Challenge

@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_finishes(challenge: Challenge, provider: str) -> None:
    complete = challenge.function("complete")
    talk = challenge.dialogue("single_call", provider)
    outcome = talk.call(complete, talk.client, talk.request, talk.run)
    talk.expect_answer(outcome, bound=5)
"""

HINTS = """
[[challenge]]
name = "01_loop"
title = "The loop, bounded"
rule = "Loop until the call list is empty."
hints = ["first", "second"]
"""

STUB = """
def complete(client, req, run):
    # TODO: write the loop.
    raise NotImplementedError
"""

LOOP = """
from sandbox import skyl

def complete(client, req, run):
    for _ in range(5):
        resp = client.complete(req)
        if not resp.tool_calls():
            return resp
        req.messages.append(resp.message)
        for call in resp.tool_calls():
            req.messages.append(skyl.tool_result_message(call.id, run(call)))
    raise skyl.ToolLoopError("gave up after 5 tool rounds")
"""

TEXT_TURN = """
from sandbox import skyl

def complete(client, req, run):
    resp = client.complete(req)
    req.messages.append(skyl.assistant_text(resp.text()))
    for call in resp.tool_calls():
        req.messages.append(skyl.tool_result_message(call.id, run(call)))
    return client.complete(req)
"""

BUSY_HANG = """
def complete(client, req, run):
    resp = client.complete(req)
    while resp.tool_calls():
        pass
"""


@pytest.fixture(autouse=True)
def _strict_inner_runs(pytester: pytest.Pytester) -> None:
    """Inner runs treat warnings as errors, as the project does. The rewrite warning is an artefact of
    running pytest inside pytest (the plugin's package is already imported); hypothesis's plugin is
    off because pytester re-imports all of hypothesis for every inner run."""
    pytester.makeini(
        "[pytest]\naddopts = -p no:hypothesispytest -p no:cacheprovider\n"
        "filterwarnings =\n    error\n    ignore::pytest.PytestAssertRewriteWarning\n"
    )


def make_course(pytester: pytest.Pytester, exercise: str = STUB) -> Path:
    """A one-challenge course: challenges/01_loop with its grading test, exercise and hints."""
    root = pytester.mkdir("challenges")
    (root / "hints.toml").write_text(HINTS)
    folder = root / "01_loop"
    folder.mkdir()
    (folder / "test_loop.py").write_text(GRADING_TEST)
    (folder / "exercise.py").write_text(exercise)
    return root


def test_untouched_stub_reports_not_started_in_one_line(pytester: pytest.Pytester) -> None:
    make_course(pytester)
    result = pytester.runpytest("challenges", "-v")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=0, failed=0)
    result.stdout.fnmatch_lines(["*test_finishes?openai? NOT STARTED*", "*2 not started in*"])
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*FAILURES*")
    result.stdout.no_fnmatch_line("*NotImplementedError*")


def test_run_ends_with_a_challenges_summary(pytester: pytest.Pytester) -> None:
    make_course(pytester)
    result = pytester.runpytest("challenges")
    result.stdout.fnmatch_lines(
        [
            "*= challenges =*",
            "  01_loop  not started  [[]----------[]]   0/2    The loop, bounded",
            "Progress [[]--------------------[]] 0/1 challenges passed",
            "Next: 01_loop. Read challenges/01_loop/README.md, then edit exercise.py. Stuck? `sandbox hint 1`.",
        ]
    )


def test_correct_loop_passes_on_every_wire_format(pytester: pytest.Pytester) -> None:
    make_course(pytester, LOOP)
    result = pytester.runpytest("challenges")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["  01_loop  passed*2/2*", "*1/1 challenges passed", "*sandbox solution 1*"])


def test_provider_rejection_shows_transcript_error_rule_and_hint(pytester: pytest.Pytester) -> None:
    make_course(pytester, TEXT_TURN)
    result = pytester.runpytest("challenges", "-k", "openai")
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines(
        [
            "complete() on scenario 'single_call' on openai: the provider rejected request 2 of 2.",
            "In the conversation, the results from message 2 on follow an assistant turn without tool calls, not "
            "the turn that made the calls.",
            "Conversation as sent in request 2*",
            '    0  user       "What\'s the weather in Paris?"',
            '->  1  assistant  "Let me check the weather in Paris." (no tool calls)',
            '    2  tool       result for call_*: "18C, clear"',
            "Provider said: openai 400: Invalid parameter: messages with role 'tool' must be a response*",
            "Rule: Append resp.message before any tool result: every provider requires it.",
            "Hint: A tool result has no assistant turn with tool calls right before it. Append resp.message",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*During handling*")


def test_learner_exception_shows_only_the_learners_frames(pytester: pytest.Pytester) -> None:
    make_course(pytester, "def complete(client, req, run):\n    return req.no_such_field\n")
    result = pytester.runpytest("challenges", "-k", "openai")
    result.stdout.fnmatch_lines(
        [
            "complete() on scenario 'single_call' on openai raised AttributeError instead of returning*",
            '*File "*exercise.py", line 2, in complete',
            "*return req.no_such_field",
            "*AttributeError: 'Request' object has no attribute 'no_such_field'",
        ]
    )
    result.stdout.no_fnmatch_line("*_dialogue.py*")
    result.stdout.no_fnmatch_line("*_runner.py*")


@pytest.mark.slow
def test_hang_fails_its_own_test_with_a_message(pytester: pytest.Pytester) -> None:
    make_course(pytester, BUSY_HANG)
    started = time.monotonic()
    result = pytester.runpytest("challenges", "--challenge-timeout", "0.5")
    assert time.monotonic() - started < 120  # cut off, not run forever: generous for a busy machine
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "complete() on scenario 'single_call' on openai did not finish within 0.5 s, so the grader*",
            "- a `while` loop whose condition never changes*",
        ]
    )


def test_syntax_error_is_one_clear_failure_per_test(pytester: pytest.Pytester) -> None:
    make_course(pytester, "def complete(client, req, run)\n    pass\n")
    result = pytester.runpytest("challenges")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["challenges/01_loop/exercise.py has a syntax error at line 1: *"])
    result.stdout.no_fnmatch_line("*Traceback*")


def test_impl_grades_the_named_module_instead_of_exercise(pytester: pytest.Pytester) -> None:
    make_course(pytester)
    pytester.mkdir("reference")
    (pytester.path / "reference" / "01_loop.py").write_text(LOOP)
    result = pytester.runpytest("challenges", "--impl", "reference")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["Graded reference/<challenge>.py, not exercise.py."])


def test_impl_without_the_module_fails_with_its_path(pytester: pytest.Pytester) -> None:
    make_course(pytester)
    pytester.mkdir("reference")
    result = pytester.runpytest("challenges", "--impl", "reference")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["reference/01_loop.py does not exist."])


def test_impl_that_is_not_a_directory_is_a_usage_error(pytester: pytest.Pytester) -> None:
    make_course(pytester)
    result = pytester.runpytest("challenges", "--impl", "nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--impl nowhere: no such directory. It should hold one module per challenge*"])


def test_report_is_gradescope_results_json(pytester: pytest.Pytester) -> None:
    make_course(pytester)
    pytester.runpytest("challenges", "--report", "results.json")
    report = json.loads((pytester.path / "results.json").read_text())
    assert report["score"] == 0
    assert report["output"] == "0/1 challenges passed; 0/2 tests passed."
    assert report["extra_data"]["challenges"] == {
        "01_loop": {"status": "not started", "passed": 0, "failed": 0, "not_started": 2, "not_run": 0}
    }
    first = report["tests"][0]
    assert first["name"] == "01_loop: test_finishes[openai]"
    assert (first["status"], first["score"], first["max_score"], first["number"]) == ("failed", 0.0, 1.0, "1.1")
    assert first["output"].startswith("01_loop: not started (complete() in challenges/01_loop/exercise.py")


def test_report_scores_passing_tests(pytester: pytest.Pytester) -> None:
    make_course(pytester, LOOP)
    pytester.runpytest("challenges", "--report", "results.json")
    report = json.loads((pytester.path / "results.json").read_text())
    assert report["score"] == 2
    assert [test["status"] for test in report["tests"]] == ["passed", "passed"]
    assert report["extra_data"]["challenges"]["01_loop"]["status"] == "passed"


@pytest.mark.slow
def test_a_process_that_exits_fails_only_its_own_test(pytester: pytest.Pytester) -> None:
    crash = "import os\n" + LOOP.replace(
        "    for _ in range(5):", "    if client.provider == 'openai':\n        os._exit(0)\n    for _ in range(5):"
    )
    make_course(pytester, crash)
    result = pytester.runpytest_subprocess("challenges", "--report", "results.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "complete() on scenario 'single_call' on openai ended the process running challenges/01_loop/exercise.py: "
            "its process exited with code 0*",
        ]
    )
    report = json.loads((pytester.path / "results.json").read_text())
    assert [test["status"] for test in report["tests"]] == ["failed", "passed"]
    assert report["extra_data"]["challenges"]["01_loop"]["status"] == "failing"


def test_report_lists_the_tests_a_stopped_run_never_reached(pytester: pytest.Pytester) -> None:
    make_course(pytester, TEXT_TURN)
    result = pytester.runpytest("challenges", "--report", "results.json", "-x")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = json.loads((pytester.path / "results.json").read_text())
    assert [test["status"] for test in report["tests"]] == ["failed", "failed"]
    assert report["tests"][1]["output"].startswith("Did not run: the test run stopped before this test")
    assert report["extra_data"]["challenges"]["01_loop"]["status"] == "failing"


def test_junitxml_records_not_started_as_failures(pytester: pytest.Pytester) -> None:
    make_course(pytester)
    pytester.runpytest("challenges", "--junitxml", "junit.xml")
    xml = (pytester.path / "junit.xml").read_text()
    assert 'failures="2"' in xml
    assert "01_loop: not started" in xml


def test_progress_is_recorded_for_the_cli(pytester: pytest.Pytester) -> None:
    root = make_course(pytester, LOOP)
    pytester.runpytest("challenges")
    state = json.loads((root / ".sandbox-state.json").read_text())
    result = state["results"]["01_loop"]
    assert (result["status"], result["passed"], len(result["digest"])) == ("passed", 2, 64)


@pytest.mark.parametrize("args", [("-k", "openai"), ("--impl", "challenges/01_loop/..")], ids=["partial", "impl"])
def test_progress_is_not_recorded_for_partial_or_impl_runs(pytester: pytest.Pytester, args: tuple[str, str]) -> None:
    root = make_course(pytester, LOOP)
    (root / "01_loop.py").write_text(LOOP)
    pytester.runpytest("challenges", *args)
    assert not (root / ".sandbox-state.json").exists()


def test_unrelated_test_runs_are_untouched(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest("--sandbox-report", "results.json")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*challenges*")
    assert not (pytester.path / "results.json").exists()


def test_an_unrelated_run_loads_neither_the_grader_nor_the_engine(pytester: pytest.Pytester) -> None:
    """An engineer's own test run pays only for the plugin's options and guard: the grading machinery,
    the engine and the client load when a challenge or a mount needs them."""
    pytester.makepyfile(
        test_plain="""
import sys

def test_plain():
    heavy = ("sandbox.engine", "sandbox.skyl", "sandbox.grading.judge._harness", "hypothesis")
    assert not [name for name in sys.modules if name.startswith(heavy)]
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_unrelated_runs_leave_the_short_spellings_to_the_project(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
def pytest_addoption(parser):
    for name in ("--impl", "--report", "--room", "--name", "--isolation"):
        parser.addoption(name, dest="project_" + name[2:])
"""
    )
    pytester.makepyfile(
        test_plain="def test_plain(request):\n    assert request.config.getoption('project_report') == 'out.html'\n"
    )
    result = pytester.runpytest("--report", "out.html", "--name", "mine")
    result.assert_outcomes(passed=1)
    assert "--sandbox-impl" in "\n".join(pytester.runpytest("--help").outlines)


def test_challenge_fixture_outside_a_challenge_fails_clearly(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_misplaced="def test_misplaced(challenge):\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*The `challenge` fixture grades challenges: use it in challenges/NN_name/test_*"])


def test_marker_makes_any_test_a_challenge(pytester: pytest.Pytester) -> None:
    marked = GRADING_TEST.replace(
        "@pytest.mark.parametrize", '@pytest.mark.challenge("07_custom")\n@pytest.mark.parametrize'
    )
    pytester.makepyfile(test_custom=marked)
    (pytester.path / "exercise.py").write_text(LOOP)
    result = pytester.runpytest()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["  07_custom  passed*"])
