"""The course checks itself: layout and hints, every stub "not started", every solution passing, and a
catalogue of known-wrong loops, each rejected by the test it should fail, with the message it should show."""

from __future__ import annotations

import ast
import json
import shutil
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sandbox.grading.judge._meta import load_challenges

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
CHALLENGES = ROOT / "challenges"
SOLUTIONS = ROOT / "solutions"
NAMES = [
    "01_apply_tool_results",
    "02_bounded_loop",
    "03_several_calls",
    "04_report_runaway",
    "05_streaming",
    "06_detect_the_end",
    "07_failing_tools",
    "08_async",
    "09_keep_the_whole_turn",
    "10_retry_without_repeating",
]
# pytester re-imports hypothesis for every inner run unless its plugin is off; the rewrite warning
# only says the outer run imported the plugin's package first.
INNER = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning")


def grade(pytester: pytest.Pytester, impl: Path, *targets: str, timeout: str = "5") -> dict[str, Any]:
    """Run the real grading tests against `impl`, and return the results.json they wrote."""
    report = pytester.path / "results.json"
    pytester.runpytest(*targets, "--impl", str(impl), "--report", str(report), "--challenge-timeout", timeout, *INNER)
    data: dict[str, Any] = json.loads(report.read_text())
    return data


# -- layout ----------------------------------------------------------------------------------------


def test_course_has_exactly_the_issues_challenges() -> None:
    folders = sorted(path.name for path in CHALLENGES.iterdir() if path.is_dir() and path.name[0].isdigit())
    assert folders == NAMES
    assert [info.name for info in load_challenges(CHALLENGES)] == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_challenge_folder_is_complete(name: str) -> None:
    folder = CHALLENGES / name
    assert sorted(path.name for path in folder.glob("*") if path.name != "__pycache__") == sorted(
        ["README.md", "exercise.py", f"test_{name[3:]}.py"]
    )
    readme = (folder / "README.md").read_text()
    assert "**Rule:**" in readme and f"pytest challenges/{name}" in readme


@pytest.mark.parametrize("name", NAMES)
def test_exercise_has_one_todo_and_raises_not_implemented(name: str) -> None:
    source = (CHALLENGES / name / "exercise.py").read_text()
    assert source.count("TODO") == 1
    tree = ast.parse(source)
    functions = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    assert functions, "an exercise defines the functions the learner writes"
    for function in functions:
        assert ast.get_docstring(function), f"{function.name} needs a docstring"
        last = function.body[-1]
        assert isinstance(last, ast.Raise) and ast.unparse(last) == "raise NotImplementedError"


def test_every_challenge_has_a_title_a_rule_and_at_least_two_hints() -> None:
    entries = tomllib.loads((CHALLENGES / "hints.toml").read_text())["challenge"]
    assert [entry["name"] for entry in entries] == NAMES
    for entry in entries:
        assert entry["title"] and entry["rule"]
        assert len(entry["hints"]) >= 2 and all(hint.strip() for hint in entry["hints"])


def test_grading_files_have_unique_basenames() -> None:
    tests = [path.name for path in CHALLENGES.glob("*/test_*.py")]
    assert len(tests) == len(set(tests)) == len(NAMES)


def test_every_challenge_has_a_solution_and_nothing_else_is_there() -> None:
    assert sorted(path.stem for path in SOLUTIONS.glob("*.py")) == NAMES


def test_streaming_solution_writes_its_own_collector() -> None:
    source = (SOLUTIONS / "05_streaming.py").read_text()
    assert "def collect_stream(" in source
    assert "skyl.collect_stream" not in source and "StreamCollector" not in source


def test_state_file_is_gitignored() -> None:
    assert ".sandbox-state.json" in (CHALLENGES / ".gitignore").read_text().split()


# -- stubs and solutions ----------------------------------------------------------------------------


@pytest.mark.slow
def test_every_stub_reports_not_started(pytester: pytest.Pytester) -> None:
    stubs = pytester.mkdir("stubs")
    for name in NAMES:
        shutil.copy(CHALLENGES / name / "exercise.py", stubs / f"{name}.py")
    report = grade(pytester, stubs, str(CHALLENGES))
    outcomes = {test["extra_data"]["outcome"] for test in report["tests"]}
    assert outcomes == {"not started"}
    assert {entry["status"] for entry in report["extra_data"]["challenges"].values()} == {"not started"}
    assert len(report["tests"]) > 100


@pytest.mark.slow
def test_every_solution_passes(pytester: pytest.Pytester) -> None:
    report = grade(pytester, SOLUTIONS, str(CHALLENGES))
    failed = [test["name"] + "\n" + test["output"] for test in report["tests"] if test["status"] != "passed"]
    assert not failed, "\n\n".join(failed)


# -- known-wrong loops, rejected for the right reason ------------------------------------------------

LOOP = """
from sandbox import skyl

def complete(client, req, run):
    for _ in range({rounds}):
        resp = {send}
        calls = resp.tool_calls()
        if {done}:
            return {answer}
        {append_turn}
        for call in calls:
            {append_result}
    {give_up}
"""
RIGHT = {
    "rounds": "5",
    "send": "client.complete(req)",
    "done": "not calls",
    "answer": "resp",
    "append_turn": "req.messages.append(resp.message)",
    "append_result": "req.messages.append(skyl.tool_result_message(call.id, run(call)))",
    "give_up": "raise skyl.ToolLoopError('gave up after 5 tool rounds')",
}


def loop(**changes: str) -> str:
    """The lesson's loop with one mistake in it."""
    return LOOP.format(**{**RIGHT, **changes})


COLLECT = (SOLUTIONS / "05_streaming.py").read_text()
NO_ADVICE = (SOLUTIONS / "04_report_runaway.py").read_text().replace("check what these tools return", "sorry")


@dataclass(frozen=True)
class Wrong:
    """A known-wrong implementation, the grading test it must fail, and what that failure must say."""

    challenge: str
    label: str
    source: str
    test: str
    says: str


def apply(body: str) -> str:
    return "from sandbox import skyl\n\ndef apply_tool_results(req, resp, results):\n" + textwrap.indent(body, "    ")


TRY_RUN = "try:\n    {ok}\nexcept Exception as exc:\n    {failed}"


def try_run(ok: str, failed: str) -> str:
    """A result line for `loop(append_result=...)` that catches the tool's failure."""
    return textwrap.indent(TRY_RUN.format(ok=ok, failed=failed), " " * 12).strip()


RESULT = "skyl.tool_result_message(call.id, results[call.id])"
WRONG = [
    Wrong(
        "01_apply_tool_results",
        "text_turn",
        apply(
            f"req.messages.append(skyl.assistant_text(resp.text()))\nfor call in resp.tool_calls():\n"
            f"    req.messages.append({RESULT})"
        ),
        "test_appends_the_turn_then_one_result_per_call[single_call-anthropic]",
        "skyl.assistant_text(resp.text()) keeps the prose and drops",
    ),
    Wrong(
        "01_apply_tool_results",
        "results_first",
        apply(f"for call in resp.tool_calls():\n    req.messages.append({RESULT})\nreq.messages.append(resp.message)"),
        "test_appends_the_turn_then_one_result_per_call[parallel_calls-gemini]",
        "Rule: Append resp.message before any tool result",
    ),
    Wrong(
        "01_apply_tool_results",
        "dict_order",
        apply(
            "req.messages.append(resp.message)\nfor call_id, output in results.items():\n"
            "    req.messages.append(skyl.tool_result_message(call_id, output))"
        ),
        "test_results_follow_the_calls_not_the_dict[openai]",
        "the results are not in call order",
    ),
    Wrong(
        "01_apply_tool_results",
        "crash_on_missing",
        apply(f"req.messages.append(resp.message)\nfor call in resp.tool_calls():\n    req.messages.append({RESULT})"),
        "test_a_call_without_a_result_gets_an_error_result[parallel_calls-1-openai]",
        "Rule: Every call gets a result: a call with no entry in `results` gets an error result",
    ),
    Wrong(
        "01_apply_tool_results",
        "skip_missing",
        apply(
            f"req.messages.append(resp.message)\nfor call in resp.tool_calls():\n    if call.id in results:\n"
            f"        req.messages.append({RESULT})"
        ),
        "test_a_call_without_a_result_gets_an_error_result[parallel_calls-1-anthropic]",
        "A call in that turn got no result",
    ),
    Wrong(
        "01_apply_tool_results",
        "silent_missing",
        apply(
            "req.messages.append(resp.message)\nfor call in resp.tool_calls():\n"
            "    req.messages.append(skyl.tool_result_message(call.id, results.get(call.id, '-')))"
        ),
        "test_a_call_without_a_result_gets_an_error_result[single_call-0-openai]",
        "does not say so: mark it is_error=True",
    ),
    Wrong(
        "02_bounded_loop",
        "unbounded",
        loop(rounds="100"),
        "test_raises_once_the_bound_is_hit[runaway-openai]",
        "never stopped: the sandbox's budget of 20 requests ended it",
    ),
    Wrong(
        "02_bounded_loop",
        "returns_at_bound",
        loop(give_up="return resp"),
        "test_raises_once_the_bound_is_hit[runaway-gemini]",
        "When the bound is hit the loop should raise",
    ),
    Wrong(
        "02_bounded_loop",
        "bound_too_small",
        loop(rounds="2"),
        "test_finishes_the_task_within_the_bound[multi_step-anthropic]",
        "needs 4 (3 rounds of tool calls",
    ),
    Wrong(
        "02_bounded_loop",
        "bound_too_large",
        loop(rounds="8"),
        "test_raises_once_the_bound_is_hit[six_rounds-openai]",
        "made 7 requests before returning; the bound is 5",
    ),
    Wrong(
        "02_bounded_loop",
        "returns_text",
        loop(answer="resp.text()"),
        "test_finishes_the_task_within_the_bound[single_call-openai]",
        "it should return a skyl.Response",
    ),
    Wrong(
        "02_bounded_loop",
        "hangs",
        "def complete(client, req, run):\n    while True:\n        pass\n",
        "test_finishes_the_task_within_the_bound[single_call-openai]",
        "did not finish within 0.3 s",
    ),
    Wrong(
        "03_several_calls",
        "turn_per_call",
        loop(
            append_turn="pass",
            append_result="req.messages += [resp.message, skyl.tool_result_message(call.id, run(call))]",
        ),
        "test_answers_every_call_of_every_turn_in_order[parallel_calls-anthropic]",
        "Provider said: anthropic 400",
    ),
    Wrong(
        "03_several_calls",
        "first_call_only",
        loop(append_result=RIGHT["append_result"] + "\n            break"),
        "test_answers_every_call_of_every_turn_in_order[parallel_rounds-openai]",
        "A call in that turn got no result",
    ),
    Wrong(
        "04_report_runaway",
        "vague",
        loop(),
        "test_the_error_names_the_bound_and_the_calls[runaway-openai]",
        "- the call sequence, in order: [get_weather get_weather get_weather get_weather get_weather]",
    ),
    Wrong(
        "04_report_runaway",
        "no_advice",
        NO_ADVICE,
        "test_the_error_names_the_bound_and_the_calls[six_rounds-anthropic]",
        "- what to look at: tell the reader what to check or change",
    ),
    Wrong(
        "05_streaming",
        "uses_skyl_collector",
        "from sandbox import skyl\n\ndef collect_stream(stream):\n    return skyl.collect_stream(stream)\n",
        "test_collect_stream_rebuilds_the_turn[single_call-openai]",
        "skyl.collect_stream and skyl.StreamCollector are off limits",
    ),
    Wrong(
        "05_streaming",
        "first_fragment_only",
        COLLECT.replace(
            "calls[event.index][2].append(event.arguments)", "calls[event.index][2][:1] = [event.arguments]"
        ),
        "test_collect_stream_rebuilds_the_turn[parallel_calls-openai]",
        "Join each call's fragments and parse",
    ),
    Wrong(
        "05_streaming",
        "drops_text",
        COLLECT.replace("text.append(event.text)", "pass"),
        "test_collect_stream_rebuilds_the_turn[plain_text-anthropic]",
        'text: "", expected "Hello! No tools needed',
    ),
    Wrong(
        "05_streaming",
        "not_streaming",
        COLLECT.replace("collect_stream(client.stream(req))", "client.complete(req)"),
        "test_complete_streams_every_turn[single_call-openai-responses]",
        "sent request 1 without streaming",
    ),
    Wrong(
        "06_detect_the_end",
        "trusts_stop_reason",
        loop(done="resp.stop_reason != skyl.StopReason.TOOL_USE"),
        "test_ends_when_the_call_list_is_empty[stop_reason_mismatch-anthropic]",
        "its stop reason said 'max_tokens'",
    ),
    Wrong(
        "06_detect_the_end",
        "continues_on_tool_use",
        loop(done="not calls and resp.stop_reason != skyl.StopReason.TOOL_USE"),
        "test_ends_when_the_call_list_is_empty[stop_reason_mismatch-openai]",
        "Loop until resp.tool_calls() is empty",
    ),
    Wrong(
        "07_failing_tools",
        "no_catch",
        loop(),
        "test_a_tool_that_raises_becomes_an_error_result[openai]",
        "A failing tool is information for the model, not a reason to stop",
    ),
    Wrong(
        "07_failing_tools",
        "skips_failed",
        loop(append_result=try_run(RIGHT["append_result"], "pass")),
        "test_an_unknown_tool_becomes_an_error_result[gemini]",
        "Provider said: gemini 400",
    ),
    Wrong(
        "07_failing_tools",
        "unmarked_error",
        loop(
            append_result=try_run(
                RIGHT["append_result"], "req.messages.append(skyl.tool_result_message(call.id, str(exc)))"
            )
        ),
        "test_an_unknown_tool_becomes_an_error_result[openai]",
        "produced no output (its tool failed, or it had no entry in the results), but its result \"'get_time'\" "
        "does not say so",
    ),
    Wrong(
        "08_async",
        "one_at_a_time",
        loop(
            send="await client.complete(req)",
            append_result=RIGHT["append_result"].replace("run(call)", "await run(call)"),
        ).replace("def complete", "async def complete"),
        "test_runs_the_calls_of_a_turn_concurrently[parallel_calls-openai]",
        "ran the calls of turn 1 one at a time",
    ),
    Wrong(
        "08_async",
        "not_async",
        (SOLUTIONS / "02_bounded_loop.py").read_text(),
        "test_finishes_the_task[single_call-openai]",
        "must be defined with `async def`",
    ),
]


@pytest.mark.parametrize("wrong", WRONG, ids=[f"{wrong.challenge[:2]}-{wrong.label}" for wrong in WRONG])
def test_known_wrong_loop_fails_for_the_right_reason(pytester: pytest.Pytester, wrong: Wrong) -> None:
    impl = pytester.mkdir("impl")
    (impl / f"{wrong.challenge}.py").write_text(wrong.source)
    target = next((CHALLENGES / wrong.challenge).glob("test_*.py"))
    report = grade(pytester, impl, f"{target}::{wrong.test}", timeout="0.3" if wrong.label == "hangs" else "5")
    (result,) = report["tests"]
    assert result["extra_data"]["outcome"] == "failed", result["output"]
    assert wrong.says in result["output"], result["output"]
    assert "Traceback" not in result["output"]
