"""A submission is read as data (issue 35): only regular files directly inside its folder are graded,
and `sandbox grade` runs the program the instructor named.

Each trick is a file of `--impl DIR` that is not the learner's own regular file: a link to the
reference solution (full marks for nothing), a link to a file only root may read (its text in the
report), a FIFO (a grader waiting forever), a device (a grader reading until its memory runs out), a
file past the size bound. Graded as an instructor would, in a throwaway copy of the checkout with a
throwaway HOME, under bubblewrap and under the fallback: every test of each trick's challenge fails
with 0 points, saying which file and what to do, and the run ends by itself.

`sandbox grade`: a bare command word (`node`) is the runtime on `PATH`, never a file of that name in
the submission's folder; a program reached through a link (to another's program, or through a
folder link that would bind the checkout) is refused the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.grading.test_sandbox import _pytest, _report, _usable, checkout  # noqa: F401 - the fixture

ROOT = Path(__file__).resolve().parents[2]
JS_LOOP = ROOT / "examples" / "js" / "loop.mjs"
SECRET = "root-only secret line 7f3a"

TRICKS: dict[str, tuple[str, Callable[[Path, Path], None], str]] = {
    "link_to_solution": (
        "01_apply_tool_results",
        lambda path, copy: path.symlink_to(os.path.relpath(copy / "solutions" / path.name, path.parent)),
        "01_apply_tool_results.py is a symbolic link",
    ),
    "link_to_root_only_file": (
        "02_bounded_loop",
        lambda path, copy: path.symlink_to(copy.parent / "secret.py"),
        "02_bounded_loop.py is a symbolic link",
    ),
    "fifo": ("03_several_calls", lambda path, copy: os.mkfifo(path), "03_several_calls.py is a named pipe (FIFO)"),
    "device": (
        "04_report_runaway",
        lambda path, copy: os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5)),  # /dev/zero's own numbers
        "04_report_runaway.py is a device",
    ),
    "oversized": (
        "05_streaming",
        lambda path, copy: path.write_text("# padding\n" * 500_000, encoding="utf-8"),
        "05_streaming.py is over 4096 KiB",
    ),
}
"""Trick -> (the challenge it is graded as, how to make its file, what each failure must say)."""


@pytest.mark.parametrize("mode", ["auto", "process"], ids=["bubblewrap", "fallback"])
def test_a_file_that_is_not_the_learner_s_own_earns_nothing_and_says_why(mode: str, checkout: Path) -> None:  # noqa: F811
    _usable(mode)
    if os.geteuid() != 0:
        pytest.skip("making a device node (the /dev/zero trick) needs root")
    secret = checkout.parent / "secret.py"
    secret.write_text(f"{SECRET}\n", encoding="utf-8")
    secret.chmod(0o600)
    impl = checkout.parent / "impl"
    impl.mkdir()
    for name, make, _ in TRICKS.values():
        make(impl / f"{name}.py", checkout)
    os.chmod(impl, 0o755)
    report = checkout / "results.json"
    folders = [f"challenges/{name}" for name, _, _ in TRICKS.values()]
    done = _pytest(checkout, mode, *folders, "--impl", str(impl), "--report", str(report))
    output = done.stdout + done.stderr
    assert done.returncode == 1, f"the grader did not finish by itself with exit 1:\n{output[-3000:]}"
    assert "INTERNALERROR" not in output and SECRET not in output, output[-3000:]
    graded = _report(report)
    assert SECRET not in report.read_text(encoding="utf-8")
    tests = graded["tests"]
    assert isinstance(tests, list) and {test["extra_data"]["challenge"] for test in tests} == {
        name for name, _, _ in TRICKS.values()
    }
    says = {name: said for name, _, said in TRICKS.values()}
    wrong = [
        f"{test['name']}: {test['score']} points, saying {test['output'][:400]!r}"
        for test in tests
        if test["score"] or test["status"] != "failed" or says[test["extra_data"]["challenge"]] not in test["output"]
    ]
    assert not wrong and graded["score"] == 0, "\n".join(wrong)
    assert "Put the file itself there (`cp -L`)" in output


def _grade_program(folder: Path, mode: str, *command: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`sandbox grade 1 --wire openai -- COMMAND`, run from `folder` with a throwaway HOME."""
    report = folder.parent / "results.json"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "COV_"))}
    env.update(HOME=str(folder.parent / "home"), PYTHONPATH=str(ROOT))
    argv = [sys.executable, "-m", "sandbox", "grade", "1", "--wire", "openai", "--isolation", mode]
    argv += ["--report", str(report), "--timeout", "20", "--", *command]
    done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=600, check=False)
    return done, json.loads(report.read_text(encoding="utf-8"))


@pytest.fixture
def submission() -> Iterator[Path]:
    """An empty submission folder in a throwaway folder (with a HOME beside it), open to the unprivileged user."""
    scratch = Path(tempfile.mkdtemp(prefix="sandbox-exploit-"))
    try:
        for name in ("submission", "home"):
            (scratch / name).mkdir()
        for folder in (scratch, scratch / "submission"):
            folder.chmod(0o755)
        yield scratch / "submission"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.mark.parametrize("mode", ["strict", "process"], ids=["bubblewrap", "fallback"])
def test_a_bare_command_word_is_the_runtime_on_path_never_a_file_of_the_submission(mode: str, submission: Path) -> None:
    _usable("auto" if mode == "strict" else mode)
    fake = submission / "node"
    fake.write_text("#!/bin/sh\necho 'the fake node ran' >&2\nexit 3\n", encoding="utf-8")
    fake.chmod(0o755)
    shutil.copyfile(JS_LOOP, submission / "loop.mjs")
    done, graded = _grade_program(submission, mode, "node", "loop.mjs")
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "the fake node ran" not in output, output[-3000:]
    assert graded["score"] == len(graded["tests"]) > 0


@pytest.mark.parametrize("mode", ["strict", "process"], ids=["bubblewrap", "fallback"])
@pytest.mark.parametrize("linked", ["program", "folder"])
def test_a_program_reached_through_a_link_earns_nothing_and_says_why(linked: str, mode: str, submission: Path) -> None:
    """A link to another's program (or to a folder above the submission, which would bind it whole) is refused."""
    _usable("auto" if mode == "strict" else mode)
    outside = submission.parent / "elsewhere"
    outside.mkdir(mode=0o755)
    shutil.copyfile(JS_LOOP, outside / "loop.mjs")
    if linked == "program":
        (submission / "loop.mjs").symlink_to(outside / "loop.mjs")
        command, says = ["node", "loop.mjs"], "loop.mjs is a symbolic link"
    else:
        (submission / "sub").symlink_to(outside)
        command, says = ["node", "sub/loop.mjs"], "sub (on the way to sub/loop.mjs) is a symbolic link"
    done, graded = _grade_program(submission, mode, *command)
    output = done.stdout + done.stderr
    assert done.returncode == 1 and says in output, output[-3000:]
    assert graded["score"] == 0 and all(says in test["output"] for test in graded["tests"])
