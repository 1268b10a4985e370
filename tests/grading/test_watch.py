"""`sandbox check` and `sandbox watch` as a learner sees them in a terminal: one screen per grade, the
first failure and nothing of the grader's plumbing (no private temp path, no pytest -x banner), each
save re-graded by the same warm grader, and each grade still run in a fresh worker."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandbox.cli import main
from sandbox.grading.judge._progress import CLEAR

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
WAITING = "Waiting for you to save a file... (stuck? sandbox hint 1"
PRINTS_ITS_PID = """
import os

from sandbox import skyl


def apply_tool_results(req: skyl.Request, resp: skyl.Response, results: dict[str, str]) -> None:
    started = open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]  # each sandbox numbers its pids anew
    print(f"worker pid {os.getpid()} started {started} save {SAVE}")
    req.messages.append(skyl.assistant_text(resp.text()))
    for call in resp.tool_calls():
        req.messages.append(skyl.tool_result_message(call.id, results.get(call.id, "")))
"""


@pytest.fixture
def course(tmp_path: Path) -> Path:
    root = tmp_path / "challenges"
    root.mkdir()
    shutil.copy(ROOT / "challenges" / "hints.toml", root)
    for name in ("01_apply_tool_results", "02_bounded_loop"):
        shutil.copytree(ROOT / "challenges" / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_check_prints_no_private_path(course: Path, capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "2", "--dir", str(course)]) == 1
    out = capfd.readouterr().out
    assert "02_bounded_loop  not started" in out
    assert "Results written" not in out and "sandbox-check-" not in out and "results.json" not in out


class Terminal:
    """`sandbox watch` on a pseudo-terminal, as a learner runs it."""

    def __init__(self, course: Path) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sandbox", "watch", "--dir", str(course)],
            stdin=slave, stdout=slave, stderr=slave, cwd=course.parent, start_new_session=True,
        )  # fmt: skip
        os.close(slave)
        self.screen = ""

    def read_until(self, marker: str, count: int, timeout: float = 180) -> str:
        """Everything printed once `marker` has been printed `count` times."""
        deadline = time.monotonic() + timeout
        while self.screen.count(marker) < count:
            left = deadline - time.monotonic()
            assert left > 0, f"no {marker!r} x{count} within {timeout} s in:\n{self.screen[-4000:]}"
            ready, _, _ = select.select([self.master], [], [], min(left, 1.0))
            if ready:
                try:
                    self.screen += os.read(self.master, 1 << 16).decode(errors="replace")
                except OSError:  # the watch ended: the assertion above says what it printed
                    assert self.process.poll() is None, self.screen[-4000:]
        return self.screen

    def children(self) -> set[int]:
        tasks = Path(f"/proc/{self.process.pid}/task")
        return {int(pid) for task in tasks.iterdir() for pid in (task / "children").read_text().split()}

    def close(self) -> None:
        os.killpg(self.process.pid, 15)
        self.process.wait(10)
        os.close(self.master)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the process tree from /proc (Linux)")
def test_watch_clears_the_screen_shows_the_failure_alone_and_regrades_in_a_warm_grader(course: Path) -> None:
    exercise = course / "01_apply_tool_results" / "exercise.py"
    exercise.write_text(PRINTS_ITS_PID.replace("SAVE", "1"), encoding="utf-8")
    terminal = Terminal(course)
    try:
        first = terminal.read_until(WAITING, 1)
        graders = terminal.children()
        exercise.write_text(PRINTS_ITS_PID.replace("SAVE", "2"), encoding="utf-8")
        screen = ANSI.sub("", terminal.read_until(WAITING, 2).replace(CLEAR, "<CLEAR>"))
        assert terminal.children() == graders and len(graders) == 1, "each save goes to the same warm grader"
    finally:
        terminal.close()
    assert first.count(CLEAR) == 1 and screen.count("<CLEAR>") == 2, "the screen is cleared before each grade"
    second = screen.rsplit("<CLEAR>", 1)[1]
    assert second.count("=== 01_apply_tool_results") == 1 and "save 1" not in second
    assert "the provider rejected request" in second and "1 failed" in second, "the first failure, in full"
    for plumbing in ("stopping after", "Results written", "sandbox-watch-", "results.json", "!!!!"):
        assert plumbing not in screen
    workers = set(re.findall(r"worker pid (\d+) started (\d+) save \d", screen))
    pids = {int(pid) for pid, _ in workers}
    assert len(workers) == 2 and not pids & graders, "each grade runs the learner's code in a fresh worker"
