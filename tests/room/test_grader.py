"""The grader's side of the room: `pytest challenges/ --room URL --name NAME` posts rules, never code,
and a room that is down or refusing never changes local grading."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.grading.judge._room_graded import scrub
from tests.room_server import serving_room

ROOT = Path(__file__).resolve().parents[2]
MUTANT = ROOT / "tests" / "mutants" / "01_missing_raises"


def _pytest(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "SANDBOX_ROOM_CACHE": str(tmp_path / "rooms.json"), **(env or {})}
    for name in ("SANDBOX_ROOM", "SANDBOX_ROOM_NAME", "PYTEST_ADDOPTS"):
        if name not in (env or {}):
            environment.pop(name, None)
    command = [sys.executable, "-m", "pytest", "challenges/01_apply_tool_results", "-q", "-p", "no:cacheprovider"]
    return subprocess.run(
        [*command, "--impl", str(MUTANT), *args], cwd=ROOT, capture_output=True, text=True, env=environment, timeout=300
    )


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_scrub_keeps_the_frame_and_drops_the_learners_line_of_code() -> None:
    text = (
        "apply_tool_results() raised KeyError:\n"
        '      File "/home/ada/work/challenges/01_x/exercise.py", line 14, in apply_tool_results\n'
        "        secret = results[call.id]  # my code\n"
        "    KeyError: 'call_1'\n"
    )
    assert scrub(text).splitlines() == [
        "apply_tool_results() raised KeyError:",
        '      File "exercise.py", line 14, in apply_tool_results',
        "        [your code: not sent to the room]",
        "    KeyError: 'call_1'",
    ]


@pytest.mark.slow
def test_pytest_room_posts_tallies_rules_and_feedback_never_code(tmp_path: Path) -> None:
    with serving_room(tmp_path / "room.db") as served:
        done = _pytest(tmp_path, "--room", served.room, "--name", "Ada")
        assert done.returncode == 1, done.stdout[-2000:]
        assert "room: this run is on the room's page as 'Ada'" in done.stdout
        assert "api_key=sk-room-" in done.stdout
        (row,) = served.instructor("/api/state").json()["learners"]
        cell = row["cells"]["01_apply_tool_results"]
        passed, failed = (re.search(rf"(\d+) {outcome}", done.stdout) for outcome in ("passed", "failed"))
        assert passed is not None and failed is not None, done.stdout[-2000:]
        total = int(passed.group(1)) + int(failed.group(1))  # challenge 01's tests, as this run counted them
        assert (row["name"], cell["status"], cell["total"]) == ("Ada", "failing", total)
        assert cell["passed"] == int(passed.group(1)) < total
        assert cell["rules"] == [
            "Every call gets a result: a call with no entry in `results` gets an error result, never a crash."
        ]
        failure = served.instructor("/api/learners/Ada").json()["latest_failure"]
        assert "raised KeyError" in failure["headline"] and "Provider said" not in failure["headline"]
        assert "[your code: not sent to the room]" in failure["text"]
        assert str(MUTANT) not in failure["text"]
        source = (MUTANT / "01_apply_tool_results.py").read_text(encoding="utf-8")
        posted = served.instructor("/api/state").text + served.instructor("/api/learners/Ada").text
        for line in source.splitlines():
            if len(line.strip()) > 12 and not line.strip().startswith(("#", '"', "from", "import")):
                assert line.strip() not in posted, f"the learner's code reached the room: {line.strip()!r}"
        cached = (tmp_path / "rooms.json").read_text(encoding="utf-8")
        again = _pytest(tmp_path, "--room", served.base, "--name", "Ada")  # the cached token: the same learner
        assert "room: this run is on the room's page as 'Ada'" in again.stdout, again.stdout[-1500:]
        (row,) = served.instructor("/api/state").json()["learners"]
        assert row["cells"]["01_apply_tool_results"]["streak"] == 2
        assert (tmp_path / "rooms.json").read_text(encoding="utf-8") == cached, "one join per learner, not per run"


@pytest.mark.slow
def test_pytest_room_joins_again_when_the_room_forgot_the_token(tmp_path: Path) -> None:
    port = _closed_port()
    with serving_room(tmp_path / "first.db", port=port) as served:
        assert "on the room's page as 'Ada'" in _pytest(tmp_path, "--room", served.room, "--name", "Ada").stdout
    with serving_room(tmp_path / "fresh.db", port=port) as fresh:  # the same URL, a new room: the token is unknown
        done = _pytest(tmp_path, "--room", fresh.room, "--name", "Ada")
        assert "on the room's page as 'Ada'" in done.stdout, done.stdout[-1500:]
        assert [row["name"] for row in fresh.instructor("/api/state").json()["learners"]] == ["Ada"]


@pytest.mark.slow
def test_pytest_room_joins_from_the_environment(tmp_path: Path) -> None:
    with serving_room(tmp_path / "room.db") as served:
        done = _pytest(tmp_path, env={"SANDBOX_ROOM": served.room, "SANDBOX_ROOM_NAME": "Grace"})
        assert "room: this run is on the room's page as 'Grace'" in done.stdout, done.stdout[-1500:]
        assert [row["name"] for row in served.instructor("/api/state").json()["learners"]] == ["Grace"]


@pytest.mark.slow
def test_pytest_room_down_grading_goes_on_and_says_so_once(tmp_path: Path) -> None:
    alone = _pytest(tmp_path)
    down = _pytest(tmp_path, "--room", f"http://127.0.0.1:{_closed_port()}/room", "--name", "Ada")
    assert down.returncode == alone.returncode == 1
    lines = [line for line in down.stdout.splitlines() if line.startswith("room:")]
    assert len(lines) == 1, down.stdout[-1500:]
    assert "cannot reach the room" in lines[0] and lines[0].endswith("grading went on without it.")
    summary = [line for line in alone.stdout.splitlines() if "01_apply_tool_results " in line]
    assert summary and all(line in down.stdout for line in summary), "the same verdicts with the room down"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--name", "Ada"), None),
        (("--room", "ROOM"), "needs --name NAME"),
        (("--room", "ROOM", "--name", "Ada"), "refused the join (409"),
    ],
    ids=["name-without-room", "room-without-name", "name-taken"],
)
def test_pytest_room_problems_are_one_line(tmp_path: Path, args: tuple[str, ...], expected: str | None) -> None:
    with serving_room(tmp_path / "room.db") as served:
        if expected and "409" in expected:
            import httpx

            httpx.post(f"{served.room}/api/join", json={"name": "Ada"}, timeout=10)  # someone else took it
        done = _pytest(tmp_path, *(served.room if arg == "ROOM" else arg for arg in args))
        assert done.returncode == 1
        lines = [line for line in done.stdout.splitlines() if line.startswith("room:")]
        if expected is None:
            assert lines == []
        else:
            assert len(lines) == 1 and expected in lines[0] and "grading went on without it" in lines[0], lines


@pytest.mark.slow
def test_sandbox_grade_room_posts_a_programs_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from sandbox.cli import main
    from sandbox.grading.judge._lessons import lesson_for
    from sandbox.wire import Rule

    monkeypatch.setenv("SANDBOX_ROOM_CACHE", str(tmp_path / "rooms.json"))
    with serving_room(tmp_path / "room.db") as served:
        monkeypatch.setenv("SANDBOX_ROOM", served.room)  # restored after the test: `grade` passes it on
        monkeypatch.setenv("SANDBOX_ROOM_NAME", "Linus")
        program = [sys.executable, str(ROOT / "tests" / "programs" / "loop.py"), "--mistake", "assistant_text"]
        status = main(["grade", "2", "--wire", "anthropic", "--name", "Ken", "--", *program])
        out = capsys.readouterr().out
        assert status == 1
        assert "room: this run is on the room's page as 'Ken'" in out
        (row,) = served.instructor("/api/state").json()["learners"]
        cell = row["cells"]["02_bounded_loop"]
        assert (row["name"], cell["status"]) == ("Ken", "failing")
        assert cell["rules"] == [lesson_for(Rule.RESULT_WITHOUT_TURN).rule]
        failure = served.instructor("/api/learners/Ken").json()["latest_failure"]
        assert failure["test"] and "Rule:" in failure["text"]
