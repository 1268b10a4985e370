"""The reference programs in Go and JavaScript pass through `sandbox grade`; the Go mistakes fail with
the rule named; a room of Go submissions gets one honest report each.

Run wherever `go` and `node` are installed; CI installs Go (`.ci/run` sets SANDBOX_REQUIRE_GO=1, so
there a missing toolchain fails instead of skipping). Go builds once per session into a temporary
directory, with a temporary cache and no network: the examples use the standard library only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sandbox.cli import main
from sandbox.grading.judge._lessons import REPORT, Lesson, lesson_for
from sandbox.grading.programs._program_cases import CASES
from sandbox.wire import Rule

ROOT = Path(__file__).resolve().parent.parent
GO_MODULE = ROOT / "examples" / "go"
JS_LOOP = ROOT / "examples" / "js" / "loop.mjs"
MISTAKES = ("assistant_text", "unbounded", "no_sequence")
ALL_CASES = sum(len(cases) for cases in CASES.values())


def go_environment(scratch: Path) -> dict[str, str]:
    """Everything Go writes goes under `scratch`; nothing is fetched (GOPROXY=off, no modules needed)."""
    return {
        **os.environ,
        "GOFLAGS": "-mod=mod",
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
        "GOCACHE": str(scratch / "cache"),
        "GOPATH": str(scratch / "path"),
        "CGO_ENABLED": "0",
    }


@pytest.fixture(scope="session")
def go(tmp_path_factory: pytest.TempPathFactory) -> str:
    found = shutil.which("go")
    if found is None:
        if os.environ.get("SANDBOX_REQUIRE_GO"):
            pytest.fail("SANDBOX_REQUIRE_GO is set but `go` is not on PATH: install golang-go.")
        pytest.skip("go is not installed")
    return found


@pytest.fixture(scope="session")
def go_scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("go")


@pytest.fixture(scope="session")
def go_programs(go: str, go_scratch: Path) -> Path:
    """The reference and the mistakes, built once: `<dir>/loop`, `<dir>/assistant_text`, ..."""
    out = go_scratch / "bin"
    out.mkdir()
    done = subprocess.run(
        [go, "build", "-o", f"{out}{os.sep}", "./..."],
        cwd=GO_MODULE,
        env=go_environment(go_scratch),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"go build failed:\n{done.stdout}{done.stderr}"
    return out


def grade(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(["grade", *argv])
    return status, capsys.readouterr().out


def test_go_sources_are_gofmt_clean(go: str) -> None:
    gofmt = Path(go).with_name("gofmt")
    done = subprocess.run([str(gofmt), "-l", "."], cwd=GO_MODULE, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout == "", f"not gofmt-formatted: {done.stdout}{done.stderr}"


def test_the_go_reference_passes_every_challenge(
    go_programs: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """OpenAI Chat and Anthropic, each plain and streamed (05 streams every request)."""
    report = tmp_path / "results.json"
    status, out = grade(capsys, "--wire", "openai,anthropic", "--report", str(report), "--", str(go_programs / "loop"))
    assert status == 0, out
    results = json.loads(report.read_text())
    assert results["score"] == 2 * ALL_CASES == len(results["tests"])
    assert results["output"].startswith(f"{len(CASES)}/{len(CASES)} challenges passed")


def names_rule(text: str, lesson: Lesson) -> bool:
    """The feedback names the lesson's rule (wrapped to the terminal's width, so whitespace is collapsed)."""
    return " ".join(f"Rule: {lesson.rule}".split()) in " ".join(text.split())


@pytest.mark.parametrize(
    ("mistake", "challenge", "failing", "lesson"),
    [
        (
            "assistant_text",
            "2",
            "finishes_the_task_within_the_bound[single_call-",
            lesson_for(Rule.RESULT_WITHOUT_TURN),
        ),
        ("unbounded", "2", "gives_up_at_the_bound[runaway-", lesson_for(Rule.BUDGET)),
        ("no_sequence", "4", "the_report_names_the_bound_and_the_calls[runaway-", REPORT),
    ],
    ids=lambda value: value if isinstance(value, str) and "[" not in value else "",
)
def test_a_go_mistake_fails_with_the_rule_named(
    go_programs: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    mistake: str,
    challenge: str,
    failing: str,
    lesson: Lesson,
) -> None:
    report = tmp_path / "results.json"
    status, out = grade(
        capsys, challenge, "--wire", "openai,anthropic", "--report", str(report), "--", str(go_programs / mistake)
    )
    assert status == 1
    assert names_rule(out, lesson), out
    tests = {test["name"]: test for test in json.loads(report.read_text())["tests"]}
    caught = [test for name, test in tests.items() if failing in name]
    assert len(caught) == 2  # one per wire format
    for test in caught:
        assert test["status"] == "failed"
        assert names_rule(test["output"], lesson), test["output"]


def test_a_room_of_go_submissions_gets_one_honest_report_each(
    go: str, go_scratch: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an instructor runs: build each submission, grade it, one results.json per learner."""
    room = tmp_path / "submissions"
    for name in ("alice", "bob", "carol"):
        shutil.copytree(GO_MODULE, room / name, ignore=shutil.ignore_patterns("mistakes"))
    shutil.copy(GO_MODULE / "mistakes" / "assistant_text" / "main.go", room / "bob" / "loop" / "main.go")
    carol = room / "carol" / "loop" / "main.go"
    carol.write_text(carol.read_text().replace("return resp, nil // the model is done", "return resp nil"))
    for key, value in go_environment(go_scratch).items():
        monkeypatch.setenv(key, value)
    reports = tmp_path / "reports"
    reports.mkdir()
    statuses = {}
    for submission in sorted(room.iterdir()):
        monkeypatch.chdir(submission)
        statuses[submission.name], _ = grade(
            capsys,
            "--wire",
            "openai",
            "--report",
            str(reports / f"{submission.name}.json"),
            "--build",
            f"{go} build -o loop-bin ./loop",
            "--",
            "./loop-bin",
        )
    assert statuses == {"alice": 0, "bob": 1, "carol": 1}
    alice, bob, carol_report = (
        json.loads((reports / f"{name}.json").read_text()) for name in ("alice", "bob", "carol")
    )
    assert alice["score"] == ALL_CASES == len(alice["tests"])
    assert 0 < len(bob["tests"]) == ALL_CASES > bob["score"]
    assert all(
        names_rule(test["output"], lesson_for(Rule.RESULT_WITHOUT_TURN))
        for test in bob["tests"]
        if test["status"] == "failed" and "single_call" in test["name"]
    )
    assert bob["extra_data"]["challenges"]["02_bounded_loop"]["status"] == "failing"
    assert carol_report["score"] == 0 and len(carol_report["tests"]) == ALL_CASES
    for test in carol_report["tests"]:
        assert test["output"].startswith("The program did not build (exit status 2), so no case could run.")
        assert "loop/main.go:31:16: syntax error: unexpected nil" in test["output"]


@pytest.fixture(scope="session")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not installed")
    return found


@pytest.mark.parametrize(("challenges", "wire"), [(None, "anthropic"), ("5", "openai"), ("3", "openai")])
def test_the_javascript_reference_passes(
    node: str, capsys: pytest.CaptureFixture[str], challenges: str | None, wire: str
) -> None:
    chosen = [challenges] if challenges else []
    status, out = grade(capsys, *chosen, "--wire", wire, "--", node, str(JS_LOOP))
    assert status == 0, out
    assert re.search(r"Progress \[#+\] (\d+)/\1 challenges passed", out), out
