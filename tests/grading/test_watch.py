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
from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox.cli import main
from sandbox.grading.judge._progress import CLEAR
from sandbox.grading.programs._watch import watch

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

    def __init__(self, course: Path, *argv: str, cwd: Path | None = None) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sandbox", "watch", "--dir", str(course), *argv],
            stdin=slave, stdout=slave, stderr=slave, cwd=cwd or course.parent, start_new_session=True,
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


def test_watch_builds_and_grades_a_program_again_on_each_save(course: Path, tmp_path: Path) -> None:
    """`sandbox watch 2 --build ... -- CMD`: the program as built from its source, graded; a save of the source
    is built and graded again, and what the build writes is no save."""
    folder = tmp_path / "program"
    folder.mkdir()
    folder.chmod(0o777)  # the build runs in the program's sandbox, as nobody when the grader is root
    fixed = (ROOT / "tests" / "programs" / "loop.py").read_text(encoding="utf-8")
    unbounded = fixed.replace("MAX_TOOL_ROUNDS = 5\n", "MAX_TOOL_ROUNDS = 50\n", 1)
    assert unbounded != fixed
    (folder / "loop.py").write_text(unbounded, encoding="utf-8")
    build = ["--build", "cp loop.py built.py", "--wire", "openai"]
    terminal = Terminal(course, "2", *build, "--", sys.executable, "built.py", cwd=folder)
    try:
        first = ANSI.sub("", terminal.read_until("Waiting for you to save a file in", 1))
        (folder / "loop.py").write_text(fixed, encoding="utf-8")
        screen = ANSI.sub("", terminal.read_until("Every case passes.", 1).replace(CLEAR, "<CLEAR>"))
    finally:
        terminal.close()
    assert "02_bounded_loop  failing" in first and "gives_up_at_the_bound" in first
    assert "(stuck? sandbox hint 2; Ctrl-C to stop)" in first
    second = screen.rsplit("<CLEAR>", 1)[1]
    assert "Building" in second and "02_bounded_loop  passed" in second, second
    assert screen.count("Building (") == 2, "built.py, written by the build, is no save"


def test_program_watch_grades_on_each_save_and_never_on_what_the_build_wrote(tmp_path: Path) -> None:
    """The poll loop itself, with a sleep that saves a file (or nothing) between looks."""
    source = tmp_path / "main.go"
    source.write_text("package main\n")
    (tmp_path / "node_modules").mkdir()
    grades: list[int] = []

    def grade(built: Callable[[], None]) -> None:
        grades.append(len(grades))
        (tmp_path / f"generated_{len(grades)}.go").write_text("// the build's output\n")  # a source suffix
        (tmp_path / "loop").write_bytes(b"\x7fELF")
        built()

    saves = iter(
        [
            None,
            lambda: (tmp_path / "node_modules" / "dep.js").write_text("x"),  # a dependency folder: no save
            lambda: os.utime(source, ns=(1, 1)),  # a save
            None,
        ]
    )

    def sleep(_: float) -> None:
        save = next(saves, KeyboardInterrupt)
        if save is KeyboardInterrupt:
            raise KeyboardInterrupt
        if save is not None:
            save()

    with pytest.raises(KeyboardInterrupt):
        watch(grade, tmp_path, interval=0.2, sleep=sleep)
    assert grades == [0, 1], "graded at the start and after the one save, never after the build's own writes"
