"""A submission is read as data (issue 35): only regular files directly inside its folder are graded.

Each trick is a file of `--impl DIR` that is not the learner's own regular file: a link to the
reference solution (full marks for nothing), a link to a file only root may read (its text in the
report), a FIFO (a grader waiting forever), a device (a grader reading until its memory runs out), a
file past the size bound. Graded as an instructor would, in a throwaway copy of the checkout with a
throwaway HOME, under bubblewrap and under the fallback: every test of each trick's challenge fails
with 0 points, saying which file and what to do, and the run ends by itself.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.grading.test_sandbox import _pytest, _report, _usable, checkout  # noqa: F401 - the fixture

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
