"""Learner code that misbehaves is contained: one challenge's noise or mischief never spoils another's
grade, the output stays readable and the report is still written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.grading.test_plugin import GRADING_TEST, LOOP

pytestmark = pytest.mark.slow

pytest_plugins = ["pytester"]

HINTS = "".join(
    f'[[challenge]]\nname = "{name}"\ntitle = "{name}"\nrule = "r"\nhints = ["a", "b"]\n\n'
    for name in ("01_loop", "02_loop")
)

NOISY_AND_MEDDLING = """
import sys
import sandbox
from sandbox import skyl

def complete(client, req, run):
    print("x" * 3_000_000)
    sys.stderr.write("y" * 3_000_000)
    sandbox.catalogue().clear()                      # a shared registry...
    scenario = sandbox.get_scenario("single_call")
    try:
        scenario.tool_outputs.clear()                # ...and a shared scenario
    except (AttributeError, TypeError):
        pass
    resp = client.complete(req)
    for call in resp.tool_calls():
        call.arguments["city"] = "Lyon"              # the turn it will send back
    req.messages.append(resp.message)
    for call in resp.tool_calls():
        req.messages.append(skyl.tool_result_message(call.id, "18C"))
    return client.complete(req)
"""


@pytest.fixture(autouse=True)
def _strict_inner_runs(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\naddopts = -p no:hypothesispytest -p no:cacheprovider\n"
        "filterwarnings =\n    error\n    ignore::pytest.PytestAssertRewriteWarning\n"
    )


def _course(pytester: pytest.Pytester, first: str) -> Path:
    root = pytester.mkdir("challenges")
    (root / "hints.toml").write_text(HINTS)
    for name, exercise in (("01_loop", first), ("02_loop", LOOP)):
        folder = root / name
        folder.mkdir()
        (folder / f"test_{name}.py").write_text(GRADING_TEST)
        (folder / "exercise.py").write_text(exercise)
    return root


def test_noisy_meddling_learner_code_is_contained(pytester: pytest.Pytester) -> None:
    _course(pytester, NOISY_AND_MEDDLING)
    result = pytester.runpytest("challenges", "--report", "results.json")
    result.assert_outcomes(failed=2, passed=2)
    output = "\n".join(result.outlines)
    assert len(output) < 100_000, "megabytes of prints are cut down to a readable verdict"
    result.stdout.fnmatch_lines(["*characters of output cut: print less, or print only on failure*"])
    result.stdout.fnmatch_lines(["  02_loop  passed*2/2*"])
    report = json.loads((pytester.path / "results.json").read_text())
    statuses = {test["name"].split(":")[0]: test["status"] for test in report["tests"]}
    assert statuses == {"01_loop": "failed", "02_loop": "passed"}


def test_a_crashing_challenge_leaves_the_others_graded(pytester: pytest.Pytester) -> None:
    _course(pytester, "def complete(client, req, run):\n    raise SystemExit(3)\n")
    result = pytester.runpytest("challenges", "--report", "results.json")
    result.stdout.fnmatch_lines(["  02_loop  passed*2/2*"])
    report = json.loads((pytester.path / "results.json").read_text())
    assert [test["status"] for test in report["tests"] if test["name"].startswith("02_loop")] == ["passed"] * 2
