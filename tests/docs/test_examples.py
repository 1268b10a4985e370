"""The reference programs in Go and JavaScript pass through `sandbox grade`; the Go mistakes fail with
the rule named, in the Go names of the lesson; a room of Go submissions gets one honest report each.

Run wherever `go` and `node` are installed (CI installs both, and there a missing one fails). Go builds
once per session into a temporary directory, with a temporary cache and no network (`go_env`): the
examples and the skyl client use the standard library only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.cli import main
from sandbox.cli._scaffold import GO_SOURCES, init_go
from sandbox.grading.judge._language import detect_language
from sandbox.grading.judge._lessons import END, REPORT, STREAM, Lesson, lesson_for
from sandbox.grading.judge._retries import GIVE_UP, NO_REPEAT, RETRY
from sandbox.grading.programs._program_cases import CASES
from sandbox.wire import PROVIDERS, Rule

ROOT = Path(__file__).resolve().parents[2]
GO_MODULE = ROOT / "examples" / "go"
JS_LOOP = ROOT / "examples" / "js" / "loop.mjs"
JS_BACKOFF = "const wait = error.retryAfter"
TURN_TWICE = "if (req.messages.length > 1) req.messages.push(...req.messages.slice(-2));\n      " + JS_BACKOFF
"""Before each retry, the last turn and its result are appended a second time."""
MISTAKES = ("assistant_text", "unbounded", "no_sequence", "stop_reason", "last_fragment", "drop_reasoning")
ALL_CASES = sum(len(cases) for cases in CASES.values())


@pytest.fixture(scope="session")
def readable_tmp() -> Iterator[Path]:
    """A temporary folder anyone may read: the grader, running as root, runs programs as `nobody` under
    bubblewrap, who cannot enter pytest's own (0700) temporary folders."""
    folder = Path(tempfile.mkdtemp(prefix="sandbox-examples-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def go_programs(go: str, go_env: dict[str, str], readable_tmp: Path) -> Path:
    """The reference and the mistakes, built once: `<dir>/loop`, `<dir>/assistant_text`, ..."""
    out = readable_tmp / "bin"
    out.mkdir(mode=0o755)
    done = subprocess.run(
        [go, "build", "-o", f"{out}{os.sep}", "./..."],
        cwd=GO_MODULE,
        env=go_env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"go build failed:\n{done.stdout}{done.stderr}"
    assert sorted(path.name for path in out.iterdir()) == sorted(["loop", *MISTAKES])
    return out


def grade(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = main(["grade", *argv])
    return status, capsys.readouterr().out


def flat(text: str) -> str:
    """Whitespace collapsed: rules and hints are wrapped to the terminal's width."""
    return " ".join(text.split())


def names_rule(text: str, lesson: Lesson, language: str = "go") -> bool:
    """The feedback names the lesson's rule, in the language's names."""
    from sandbox.grading.judge._language import translate

    return flat(f"Rule: {translate(lesson.rule, language)}") in flat(text)


def test_go_sources_are_gofmt_clean(go: str) -> None:
    gofmt = Path(go).with_name("gofmt")
    for folder in (GO_MODULE, GO_SOURCES):
        done = subprocess.run([str(gofmt), "-l", "."], cwd=folder, capture_output=True, text=True, check=False)
        assert done.returncode == 0 and done.stdout == "", f"not gofmt-formatted: {done.stdout}{done.stderr}"


@pytest.mark.slow
def test_go_vet_finds_nothing(go: str, go_env: dict[str, str]) -> None:
    done = subprocess.run(
        [go, "vet", "./..."], cwd=GO_MODULE, env=go_env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_the_go_client_passes_its_own_tests(go: str, go_env: dict[str, str]) -> None:
    """skyl's stream decoding and echo rules, case by case (sandbox/skyl/golang/skyl/skyl_test.go)."""
    done = subprocess.run(
        [go, "test", "./..."],
        cwd=GO_SOURCES / "skyl",
        env=go_env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0 and "ok" in done.stdout, done.stdout + done.stderr


@pytest.mark.slow
def test_the_go_reference_passes_every_challenge_on_all_four_wire_formats(
    go_programs: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """OpenAI Chat and Responses, Anthropic and Gemini, each plain and streamed (05 streams every
    request), reasoning turns echoed whole (09)."""
    report = tmp_path / "results.json"
    status, out = grade(capsys, "--report", str(report), "--", str(go_programs / "loop"))
    assert status == 0, out
    results = json.loads(report.read_text())
    assert results["score"] == len(PROVIDERS) * ALL_CASES == len(results["tests"])
    assert results["output"].startswith(f"{len(CASES)}/{len(CASES)} challenges passed")
    assert "09_keep_the_whole_turn" in results["extra_data"]["challenges"]
    assert "Concurrent tool calls with asyncio" not in out and "Concurrent tool calls" in out
    assert "Traceback" not in out and "CancelledError" not in out


@pytest.mark.slow
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
        ("stop_reason", "6", "ends_when_the_call_list_is_empty[stop_reason_mismatch-", END),
        ("last_fragment", "5", "streams_every_turn[single_call-", STREAM),
        ("drop_reasoning", "9", "keeps_the_whole_turn[multi_step_reasoning-", lesson_for(Rule.REASONING_DROPPED)),
    ],
    ids=lambda value: value if isinstance(value, str) and "[" not in value else "",
)
def test_a_go_mistake_fails_with_the_rule_named_in_go(
    go_programs: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    mistake: str,
    challenge: str,
    failing: str,
    lesson: Lesson,
) -> None:
    report = tmp_path / "results.json"
    wires = "openai-responses,anthropic"
    status, out = grade(capsys, challenge, "--wire", wires, "--report", str(report), "--", str(go_programs / mistake))
    assert status == 1
    assert names_rule(out, lesson), out
    tests = {test["name"]: test for test in json.loads(report.read_text())["tests"]}
    caught = [test for name, test in tests.items() if failing in name]
    assert len(caught) == 2, sorted(tests)  # one per wire format
    for test in caught:
        assert test["status"] == "failed"
        assert names_rule(test["output"], lesson), test["output"]
        # Go's names, never skyl's Python ones.
        for python in ("resp.message", "resp.tool_calls()", "assistant_text(", "resp.text()", "tool_result_message("):
            assert python not in test["output"], (python, test["output"])


def test_the_go_feedback_names_the_go_api(go_programs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The lesson's DON'T, told in the lesson's words: `skyl.AssistantText(resp.Text())`, `resp.Message`."""
    _, out = grade(capsys, "2", "--wire", "anthropic", "--", str(go_programs / "assistant_text"))
    assert "skyl.AssistantText(resp.Text()) keeps the prose and drops the calls" in flat(out)
    assert "Append resp.Message before any tool result" in flat(out)


def test_the_report_hint_writes_go_not_an_f_string(go_programs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, out = grade(capsys, "4", "--wire", "openai", "--", str(go_programs / "no_sequence"))
    assert 'fmt.Errorf("gave up after %d tool rounds; call sequence was %v' in flat(out), out


def test_the_stop_reason_mistake_is_told_about_the_stop_reason(
    go_programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not "the calls were lost on the way": nothing was lost, the loop trusted the stop reason."""
    _, out = grade(capsys, "6", "--wire", "openai", "--", str(go_programs / "stop_reason"))
    headline = out.split("======== FAILED", 1)[1].splitlines()[1]
    assert "lost on the way" not in headline, headline
    assert "stop reason" in headline and "ToolCalls()" not in headline, headline


@pytest.mark.slow
def test_a_stream_rebuilt_from_the_last_fragment_is_told_to_join_the_fragments(
    go_programs: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report = tmp_path / "results.json"
    status, _ = grade(
        capsys, "5", "--wire", "openai,anthropic", "--report", str(report), "--", str(go_programs / "last_fragment")
    )
    assert status == 1
    failed = [test for test in json.loads(report.read_text())["tests"] if test["status"] == "failed"]
    assert failed
    for test in failed:
        assert "never a reconstruction" not in test["output"], test["output"]
        assert names_rule(test["output"], STREAM), test["output"]


@pytest.mark.slow
def test_a_room_of_go_submissions_gets_one_honest_report_each(
    go: str, go_env: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an instructor runs: each learner's module (made by `sandbox init go`, the loop in loop/),
    built with a shell line, graded, one results.json per learner."""
    room = tmp_path / "submissions"
    for name, source in (("alice", "loop"), ("bob", "mistakes/assistant_text"), ("carol", "loop")):
        init_go(room / name)
        (room / name / "main.go").unlink()
        (room / name / "loop").mkdir()
        shutil.copy(GO_MODULE / source / "main.go", room / name / "loop" / "main.go")
    carol = room / "carol" / "loop" / "main.go"
    carol.write_text(carol.read_text().replace("return resp, nil // the model is done", "return resp nil"))
    for key, value in go_env.items():
        monkeypatch.setenv(key, value)
    reports = tmp_path / "reports"
    reports.mkdir()
    statuses = {}
    for submission in sorted(room.iterdir()):
        for folder, _, _ in os.walk(submission):  # the build, under bubblewrap, runs as the program's user
            os.chmod(folder, 0o777)
        monkeypatch.chdir(submission)
        statuses[submission.name], _ = grade(
            capsys,
            "--wire",
            "openai",
            "--report",
            str(reports / f"{submission.name}.json"),
            "--build",
            f"cd loop && {go} build -o ../loop-bin .",
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
        # 10's single_call cases start with a 503, which bob's loop (the lesson's, without retries) never retries.
        if test["status"] == "failed" and "single_call" in test["name"] and not test["name"].startswith("10_")
    )
    assert bob["extra_data"]["challenges"]["02_bounded_loop"]["status"] == "failing"
    assert carol_report["score"] == 0 and len(carol_report["tests"]) == ALL_CASES
    line = next(number for number, text in enumerate(carol.read_text().splitlines(), 1) if "return resp nil" in text)
    for test in carol_report["tests"]:
        assert test["output"].startswith("The program did not build (exit status 2), so no case could run.")
        assert f"main.go:{line}:16: syntax error: unexpected nil" in test["output"], test["output"]


def test_language_is_read_from_the_command_and_the_build(go_programs: Path, tmp_path: Path) -> None:
    script = tmp_path / "loop.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    assert detect_language(["node", "loop.mjs"], None) == "js"
    assert detect_language([str(go_programs / "loop")], None) == "go"  # the binary's build-info header
    assert detect_language(["./loop-bin"], "cd loop && go build -o ../loop-bin .") == "go"
    assert detect_language(["python3", "loop.py"], None) == "python"
    assert detect_language([str(script)], None) == "other"


@pytest.fixture(scope="session")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        if os.environ.get("SANDBOX_REQUIRE_NODE"):
            pytest.fail("SANDBOX_REQUIRE_NODE is set but `node` is not on PATH: install nodejs.")
        pytest.skip("node is not installed")
    return found


@pytest.mark.slow
@pytest.mark.parametrize(
    ("challenges", "wire"),
    [(None, "gemini"), ("5", "openai-responses"), ("9", "openai-responses"), ("3", "openai"), ("10", "anthropic")],
)
def test_the_javascript_reference_passes(
    node: str, capsys: pytest.CaptureFixture[str], challenges: str | None, wire: str
) -> None:
    """It speaks all four formats, plain and streamed: every challenge on Gemini, and the ones each
    other format adds something to (Responses' reasoning items, Anthropic's retry hints)."""
    chosen = [challenges] if challenges else []
    status, out = grade(capsys, *chosen, "--wire", wire, "--", node, str(JS_LOOP))
    assert status == 0, out
    assert re.search(r"Progress \[#+\] (\d+)/\1 challenges passed", out), out


@pytest.mark.slow
def test_a_program_that_speaks_fewer_formats_is_told_to_use_wire(
    node: str, capsys: pytest.CaptureFixture[str], readable_tmp: Path
) -> None:
    """A JavaScript loop that speaks OpenAI Chat and Anthropic only: graded on all four, the first thing
    it is told is which formats it did not speak and the command that grades the others."""
    fewer = readable_tmp / "two_formats.mjs"
    source = JS_LOOP.read_text()
    speaks = 'const wires = { openai, "openai-responses": responses, anthropic, gemini };'
    assert speaks in source
    fewer.write_text(source.replace(speaks, "const wires = { openai, anthropic };"))
    status, out = grade(capsys, "1", "--", node, str(fewer))
    assert status == 1
    first_screen = out.split("======== FAILED", 1)[0]
    assert "did not speak openai-responses, gemini" in flat(first_screen), first_screen
    assert f"sandbox grade 1 --wire openai,anthropic -- {node} {fewer}" in first_screen, first_screen


JS_WAIT = "await new Promise((resolve) => setTimeout(resolve, Math.min(wait, 30_000)));"
JS_GIVE_UP = (
    "`gave up after ${attempt} attempts: the provider kept answering ${error.status} (${error.type}): ` +\n"
    "            `${error.message}; check the provider's status page and your rate limits`,"
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mistake", "find", "replace", "failing", "lesson"),
    [
        ("no_retry", "const MAX_ATTEMPTS = 3;", "const MAX_ATTEMPTS = 1;", "retries_a_503[", RETRY),
        ("retries_only_429", "new Set([0, 429, 503, 529])", "new Set([429])", "retries_a_503_streamed[", RETRY),
        ("unbounded_retries", "const MAX_ATTEMPTS = 3;", "const MAX_ATTEMPTS = 10;", "gives_up_with_an", GIVE_UP),
        ("ignores_hint", JS_WAIT, "", "retries_a_rate_limit_and_an_overload[", RETRY),
        ("retries_400", " || !RETRYABLE.has(error.status)", "", "never_retries_a_400[", RETRY),
        ("vague_give_up", JS_GIVE_UP, '"the model request failed",', "gives_up_with_an_error", GIVE_UP),
        ("turn_twice", JS_BACKOFF, TURN_TWICE, "retries_a_rate_limit_and_an_overload[", NO_REPEAT),
    ],
    ids=lambda value: value if isinstance(value, str) and value.isidentifier() else "",
)
def test_a_javascript_retry_mistake_fails_with_its_rule_named(
    node: str,
    capsys: pytest.CaptureFixture[str],
    readable_tmp: Path,
    tmp_path: Path,
    mistake: str,
    find: str,
    replace: str,
    failing: str,
    lesson: Lesson,
) -> None:
    """Challenge 10's mistakes, each made in the reference loop, caught through `sandbox grade` with the
    rule named in the case that shows it."""
    source = JS_LOOP.read_text()
    assert find in source, find
    program = readable_tmp / f"{mistake}.mjs"
    program.write_text(source.replace(find, replace))
    _assert_caught_in_10(capsys, tmp_path, "openai-responses", [node, str(program)], failing, lesson, "js")


def _assert_caught_in_10(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    wire: str,
    command: list[str],
    failing: str,
    lesson: Lesson,
    language: str,
) -> None:
    """Graded on challenge 10, the program fails every case whose name holds `failing`, and the first
    of them names the rule (`lesson`) in `language`."""
    report = tmp_path / "results.json"
    status, _ = grade(capsys, "10", "--wire", wire, "--report", str(report), "--", *command)
    assert status == 1
    tests = {test["name"]: test for test in json.loads(report.read_text())["tests"]}
    caught = [test for name, test in tests.items() if failing in name]
    assert caught and all(test["status"] == "failed" for test in caught), sorted(tests)
    assert names_rule(caught[0]["output"], lesson, language), caught[0]["output"]


GO_LOOP = GO_MODULE / "loop" / "main.go"
GO_GIVE_UP = (
    'fmt.Errorf("gave up after %d attempts: the provider kept answering %d (%s): %s; "+\n\t\t\t\t'
    '"check the provider\'s status page and your rate limits", attempt, perr.Status, perr.Type, perr.Message)'
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mistake", "find", "replace", "failing", "lesson"),
    [
        ("no_retry", "maxAttempts   = 3 ", "maxAttempts   = 1 ", "retries_a_503[", RETRY),
        ("retries_only_429", "status == 0 || status == 429 || status == 503 || status == 529", "status == 429",
         "retries_a_503[", RETRY),
        ("unbounded_retries", "maxAttempts   = 3 ", "maxAttempts   = 10", "gives_up_with_an", GIVE_UP),
        ("ignores_hint", "time.Sleep(wait)", "_ = wait", "retries_a_rate_limit_and_an_overload[", RETRY),
        ("retries_400", "|| !retryable(perr.Status) {", "{", "never_retries_a_400[", RETRY),
        ("retries_all_but_400", "|| !retryable(perr.Status) {", "|| perr.Status == 400 {", "never_retries_a_401[",
         RETRY),
        ("fixed_sleep", "time.Sleep(wait)", "_ = wait\n\t\ttime.Sleep(100 * time.Millisecond)",
         "retries_a_rate_limit_and_an_overload[", RETRY),
        ("vague_give_up", GO_GIVE_UP, 'errors.New("the model request failed")', "gives_up_with_an_error", GIVE_UP),
        ("reraises_provider_error", GO_GIVE_UP, "err", "gives_up_with_an_error", GIVE_UP),
        ("counts_messages", GO_GIVE_UP, 'fmt.Errorf("gave up on a request of %d messages: the provider kept answering '
         '%d; check the provider\'s status page", len(req.Messages), perr.Status)', "gives_up_with_an_error", GIVE_UP),
    ],
    ids=lambda value: value if isinstance(value, str) and value.isidentifier() else "",
)  # fmt: skip
def test_a_go_retry_mistake_fails_with_its_rule_named(
    go: str,
    go_env: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    readable_tmp: Path,
    tmp_path: Path,
    mistake: str,
    find: str,
    replace: str,
    failing: str,
    lesson: Lesson,
) -> None:
    """Challenge 10's mistakes made in the Go reference loop (the lesson's own language), each built in a
    module made by `sandbox init go` and caught through `sandbox grade` on Anthropic, whose 429 and
    529 carry `retry-after`, with the rule named in Go's words."""
    source = GO_LOOP.read_text()
    assert find in source, find
    module = tmp_path / mistake
    init_go(module)  # a learner's module: go.mod and the shipped skyl/ beside main.go
    (module / "main.go").write_text(source.replace(find, replace))
    program = readable_tmp / mistake
    built = subprocess.run(
        [go, "build", "-o", str(program), "."], cwd=module, env=go_env, capture_output=True, text=True, timeout=600
    )
    assert built.returncode == 0, built.stdout + built.stderr
    _assert_caught_in_10(capsys, tmp_path, "anthropic", [str(program)], failing, lesson, "go")


@pytest.mark.slow
def test_the_javascript_feedback_names_the_javascript_api(
    node: str, capsys: pytest.CaptureFixture[str], readable_tmp: Path
) -> None:
    mistake = readable_tmp / "mistake.mjs"
    source = JS_LOOP.read_text()
    assert "req.messages.push(resp.message);" in source
    mistake.write_text(
        source.replace(
            "req.messages.push(resp.message);", 'req.messages.push({ role: "assistant", text: resp.text, calls: [] });'
        )
    )
    _, out = grade(capsys, "2", "--wire", "anthropic", "--", node, str(mistake))
    assert names_rule(out, lesson_for(Rule.RESULT_WITHOUT_TURN), "js"), out
    assert "skyl." not in out and "resp.tool_calls()" not in out, out


def test_the_docs_count_the_cases_the_walkthroughs_grade() -> None:
    """The walkthroughs' full grades run every case on all four formats."""
    go_page = (ROOT / "docs" / "learn" / "go.md").read_text(encoding="utf-8")
    js_page = (ROOT / "docs" / "learn" / "javascript.md").read_text(encoding="utf-8")
    go_line = next(
        line for line in go_page.splitlines() if line.startswith("sandbox grade -- ./loop") and " cases:" in line
    )
    js_line = next(line for line in js_page.splitlines() if "-- node examples/js/loop.mjs   #" in line)
    assert f"# {len(PROVIDERS) * ALL_CASES} cases" in go_line, go_line
    assert f"# {len(PROVIDERS) * ALL_CASES} cases" in js_line, js_line
