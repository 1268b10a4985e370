"""The `sandbox` command: progress, hints, solutions, watch, scenarios, replay, serve, and its errors."""

from __future__ import annotations

import functools
import json
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import sandbox.cli._main
from sandbox.cli import main
from sandbox.grading.judge._meta import load_challenges
from sandbox.grading.judge._progress import Progress
from tests.engine.kept.test_senders import _responses_continue

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ["list", "check", "hint", "watch", "solution", "scenarios", "replay", "serve", "record", "import"]


@pytest.fixture
def course(tmp_path: Path) -> Path:
    """A copy of the first two challenges (and the solutions), as a learner's clone would have them."""
    root = tmp_path / "challenges"
    root.mkdir()
    shutil.copy(ROOT / "challenges" / "hints.toml", root)
    for name in ("01_apply_tool_results", "02_bounded_loop"):
        shutil.copytree(ROOT / "challenges" / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "solutions", tmp_path / "solutions")
    return root


@functools.cache
def collected_tests(name: str) -> int:
    """How many grading tests a challenge has, as pytest collects them (the counts grow with the course)."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            str(ROOT / "challenges" / name),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    match = re.search(r"(\d+) tests? collected", result.stdout)
    assert match, result.stdout[-2000:]
    return int(match.group(1))


def solve(course: Path, name: str) -> None:
    shutil.copy(course.parent / "solutions" / f"{name}.py", course / name / "exercise.py")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: sandbox {command}")


def test_scenarios_lists_the_catalogue_with_descriptions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenarios"]) == 0
    out = capsys.readouterr().out
    for name in ("single_call", "parallel_calls", "runaway", "stop_reason_mismatch", "plain_text"):
        assert f"\n{name}\n    " in f"\n{out}"
    assert "One turn with three calls" in " ".join(out.split())


def test_replay_prints_a_reference_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "single_call", "--provider", "anthropic"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Scenario single_call on anthropic: The model calls get_weather")
    assert lines[2] == 'request 1  user   "What\'s the weather in Paris?"'
    assert lines[3].startswith(
        "           reply  \"Let me check the weather in Paris.\" calls get_weather(city='Paris')"
    )
    assert lines[4].endswith('-> "18C, clear"')
    assert lines[-1] == "Done after 2 request(s): the model answered without asking for tools."


def test_replay_of_a_runaway_gives_up_with_the_call_sequence(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "runaway"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "The loop gave up after 5 tool rounds; call sequence was "
        "[get_weather get_weather get_weather get_weather get_weather]: check what these tools return."
    )


def test_replay_wire_shows_the_bodies(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "plain_text", "--provider", "gemini", "--wire"]) == 0
    out = capsys.readouterr().out
    assert "--- request 1: POST /v1beta/models/plain_text:generateContent" in out
    assert '"contents": [' in out and "--- response 1: 200" in out


def test_replay_of_an_unknown_scenario_has_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sandbox: error: No scenario named 'nope'. The catalogue has:\n- json_arguments")


def test_hint_reveals_one_more_each_time(course: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hint", "2", "--dir", str(course)]) == 0
    first = capsys.readouterr().out
    assert first.startswith("02_bounded_loop: The loop, bounded\nRule: Loop until resp.tool_calls() is empty")
    assert "Hint 1/3: " in first and "Hint 2/3" not in first
    assert "Run `sandbox hint 2` again for the next hint." in first
    main(["hint", "02", "--dir", str(course)])
    assert "Hint 2/3: " in capsys.readouterr().out
    main(["hint", "bounded_loop", "--dir", str(course)])
    last = capsys.readouterr().out
    assert "Hint 3/3: " in last and "That was the last hint." in last
    assert json.loads((course / ".sandbox-state.json").read_text())["hints"] == {"02_bounded_loop": 3}


@pytest.mark.parametrize(
    ("language", "own", "foreign"),
    [("go", "resp.Message", "req.messages.append"), ("js", "req.messages.push(resp.message)", "resp.Message")],
)
def test_hint_speaks_the_programs_language(
    course: Path, language: str, own: str, foreign: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["hint", "1", "--lang", language, "--dir", str(course)]) == 0
    out = capsys.readouterr().out
    assert own in out and foreign not in out, out
    assert f"Run `sandbox hint 1 --lang {language}` again for the next hint." in out


def test_every_challenge_has_hints_for_go_and_javascript() -> None:
    """As many as Python's at most, and none in Python's words (json.loads, try/except, req.messages.append)."""
    python_words = ("json.loads", "except", "append(resp.message)", "tool_calls()", "asyncio", "skyl.collect_stream")
    for info in load_challenges(ROOT / "challenges"):
        for language in ("go", "js"):
            hints = info.hints_for(language)
            assert hints and hints != info.hints, (info.name, language)
            said = [hint for hint in hints if any(word in hint for word in python_words)]
            assert not said, (info.name, language, said)


@pytest.mark.parametrize("command", ["hint", "check", "solution"])
def test_unknown_challenge_has_a_clear_error(course: Path, command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "9", "--dir", str(course)]) == 2
    assert capsys.readouterr().err == (
        "sandbox: error: No challenge '9'. The challenges are:\n- 1: 01_apply_tool_results\n- 2: 02_bounded_loop\n"
    )


def test_missing_challenges_folder_has_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["list"]) == 2
    assert "no challenges folder at or above" in capsys.readouterr().err


@pytest.mark.parametrize("program", [[], ["--", "./loop"]], ids=["exercises", "program"])
def test_watch_rejects_a_bad_interval(course: Path, capsys: pytest.CaptureFixture[str], program: list[str]) -> None:
    assert main(["watch", "--interval", "0", "--dir", str(course), *program]) == 2
    assert "--interval 0.0: use a number of seconds above 0." in capsys.readouterr().err


@pytest.mark.slow
def test_list_shows_each_challenge_and_the_progress(
    course: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    solve(course, "01_apply_tool_results")
    assert main(["list", "--dir", str(course)]) == 0
    out = capfd.readouterr().out.splitlines()
    one, two = collected_tests("01_apply_tool_results"), collected_tests("02_bounded_loop")
    assert out[2:] == [
        f"  01_apply_tool_results  passed       [##########] {one:>3}/{one:<3}  Make the ordering mistake impossible",
        f"  02_bounded_loop        not started  [----------] {0:>3}/{two:<3}  The loop, bounded",
        "",
        "Progress [##########----------] 1/2 challenges passed",
        "Next: sandbox check 2   (stuck? sandbox hint 2)",
    ]

    def regrade(*args: Any, **kwargs: Any) -> int:
        raise AssertionError("nothing changed, so nothing should be graded again")

    monkeypatch.setattr(Progress, "run", regrade)
    assert main(["list", "--dir", str(course)]) == 0


@pytest.mark.slow
def test_check_exits_with_the_grade(course: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "2", "--dir", str(course)]) == 1
    count = collected_tests("02_bounded_loop")
    assert f"{count} not started" in capfd.readouterr().out
    solve(course, "02_bounded_loop")
    assert main(["check", "2", "--dir", str(course)]) == 0
    assert f"{count} passed" in capfd.readouterr().out


@pytest.mark.slow
def test_solution_unlocks_once_the_challenge_passes(course: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["solution", "1", "--dir", str(course)]) == 1
    count = collected_tests("01_apply_tool_results")
    assert (
        f"01_apply_tool_results is not started (0/{count} tests pass). Its solution unlocks once"
        in capfd.readouterr().err
    )
    solve(course, "01_apply_tool_results")
    assert main(["solution", "1", "--dir", str(course)]) == 0
    assert "def apply_tool_results(" in capfd.readouterr().out


@pytest.mark.slow
def test_watch_grades_again_on_save_and_moves_on(course: Path) -> None:
    command = [sys.executable, "-c", "import sys; from sandbox.cli import main; sys.exit(main())"]
    process = subprocess.Popen(
        [*command, "watch", "--interval", "0.1", "--dir", str(course)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in process.stdout or ()], daemon=True)
    reader.start()
    try:
        seen = _read_until(lines, "Waiting for you to save a file... (stuck? sandbox hint 1")
        assert "=== 01_apply_tool_results: Make the ordering mistake impossible" in seen
        assert "1 not started" in seen, "watch stops at the first failure"
        solve(course, "01_apply_tool_results")
        seen = _read_until(lines, "Waiting for you to save a file... (stuck? sandbox hint 2")
        assert f"{collected_tests('01_apply_tool_results')} passed" in seen
        assert "=== 02_bounded_loop: The loop, bounded" in seen
    finally:
        process.terminate()
        process.wait(10)
        reader.join(10)
        if process.stdout is not None:
            process.stdout.close()


def _read_until(lines: queue.Queue[str], marker: str, timeout: float = 120) -> str:
    """What watch printed up to `marker`; fails after `timeout` seconds, printed or not."""
    deadline = time.monotonic() + timeout
    seen: list[str] = []
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        seen.append(line)
        if marker in line:
            return "".join(seen)
    raise AssertionError(f"no {marker!r} within {timeout} s in:\n{''.join(seen)}")


def test_serve_builds_the_engine_from_its_options(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    served: dict[str, Any] = {}

    def fake_serve(
        engine: sandbox.Engine,
        *,
        host: str,
        port: int,
        cors_origins: Any,
        forwarded_allow_ips: str | None,
        ready: Callable[[int], None],
    ) -> None:
        served.update(engine=engine, host=host, port=port, cors_origins=cors_origins, forwarded=forwarded_allow_ips)
        ready(port)  # the port is bound: the banner follows

    monkeypatch.setattr(sandbox.cli._main, "serve", fake_serve)
    assert main(["serve", "--port", "9001", "--scenario", "runaway", "--budget", "7"]) == 0
    assert (served["host"], served["port"], served["engine"].budget) == ("127.0.0.1", 9001, 7)
    assert served["engine"].pinned.name == "runaway"
    assert served["cors_origins"] == ("*",)  # any page may call it, as the real APIs allow
    assert served["forwarded"] is None  # the sender is the connection: no header is believed
    out = capsys.readouterr().out
    assert out.startswith("Serving the sandbox at http://127.0.0.1:9001 (Ctrl-C to stop).")
    assert "Every request plays scenario 'runaway'." in out


def test_serve_keeps_state_in_the_store_it_is_given(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`--store sqlite:///PATH`: what the server stores, another engine on the same file continues."""
    served: dict[str, sandbox.Engine] = {}

    def fake_serve(engine: sandbox.Engine, **options: Any) -> None:
        served["engine"] = engine

    monkeypatch.setattr(sandbox.cli._main, "serve", fake_serve)
    url = f"sqlite:///{tmp_path / 'kept.db'}"
    assert main(["serve", "--store", url]) == 0
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
    ask = {"model": "single_call", "input": "Weather in Paris?", "tools": tools}
    first = json.loads(served["engine"].handle("POST", "/v1/responses", json.dumps(ask).encode()).body)
    again = json.dumps(_responses_continue(first)).encode()
    assert sandbox.Engine(store=url).handle("POST", "/v1/responses", again).status == 200


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenario", "nope"], "sandbox: error: No scenario named 'nope'."),
        (["--scenarios", "no/such/dir"], "sandbox: error: --scenarios no/such/dir: no such folder"),
        (["--budget", "0"], "sandbox: error: budget=0: use a whole number of requests, at least 1."),
        (["--cors-origin", "localhost:3000"], "sandbox: error: --cors-origin localhost:3000: an origin is"),
        (["--store", "postgres://db"], "sandbox: error: store='postgres://db': not a store the sandbox knows."),
    ],
    ids=["scenario", "scenarios", "budget", "cors-origin", "store"],
)
def test_serve_bad_options_have_clear_errors(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", *args]) == 2
    assert capsys.readouterr().err.startswith(message)
