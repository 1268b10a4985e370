"""A zygote that ends (the kernel's OOM killer, a signal from outside the sandbox) is replaced, and what it
was running is graded again in a fresh one: no test is scored for what it could not finish.

Learner code cannot end the zygote (`tests/grading/test_sandbox.py` proves it); this test ends it from
outside, as root, while challenge 01 is being imported, in a throwaway copy of the checkout.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.grading.test_sandbox import SELECTION, _report, _usable, checkout

__all__ = ["checkout"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the zygote through /proc"),
]


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _zygote_with_a_worker(root: int) -> int | None:
    """The pid of a zygote below `root` that has forked a worker, if one has."""
    zygotes = set()
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0") if entry.name.isdigit() else []
        except OSError:
            continue
        if any(b"learner._zygote import main" in arg for arg in argv) and not argv[0].endswith(b"bwrap"):
            zygotes.add(int(entry.name))
    for pid in zygotes:
        parent = _parent(pid)
        if parent in zygotes:  # a worker: its zygote is `parent`
            ancestor = parent
            while ancestor > 1 and ancestor != root:
                ancestor = _parent(ancestor)
            if ancestor == root:
                return parent
    return None


SLOW = {
    "import": "\nimport time\n\ntime.sleep(2)\n",
    "call": """
import functools, time

_first = [apply_tool_results]


@functools.wraps(apply_tool_results)
def apply_tool_results(*args, **kwargs):
    if len(_first) == 1:
        _first.append(time.sleep(2))
    return _first[0](*args, **kwargs)
""",
}
"""Where challenge 01's reference solution lingers, once a worker, for the zygote to be killed meanwhile."""


@pytest.mark.parametrize("where", sorted(SLOW))
@pytest.mark.parametrize("mode", ["auto", "process"], ids=["bubblewrap", "fallback"])
def test_a_zygote_killed_from_outside_is_replaced_and_costs_no_test_its_grade(
    mode: str, where: str, checkout: Path
) -> None:
    """Killed while challenge 01 is imported, or while its first test runs: 01, 02 and 03 (the reference
    solutions) still pass in full, graded in a fresh zygote."""
    _usable(mode)
    impl = checkout.parent / "impl"
    impl.mkdir()
    first = (checkout / "solutions" / "01_apply_tool_results.py").read_text(encoding="utf-8")
    (impl / "01_apply_tool_results.py").write_text(first + SLOW[where], encoding="utf-8")
    for name in ("02_bounded_loop", "03_several_calls"):
        shutil.copyfile(checkout / "solutions" / f"{name}.py", impl / f"{name}.py")
    os.chmod(impl, 0o755)
    report = checkout / "results.json"
    folders = ["challenges/01_apply_tool_results", "challenges/02_bounded_loop", "challenges/03_several_calls"]
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYTEST_", "COV_"))}
    env.update(HOME=str(checkout.parent / "home"), PYTHONPATH=str(checkout), PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "pytest", *folders, "--impl", str(impl), "--report", str(report)]
    command += ["-k", SELECTION, "--isolation", mode, "--sandbox-lanes", "1", "-q", "-p", "no:cacheprovider"]
    command += ["--rootdir", str(checkout)]
    grading = subprocess.Popen(command, cwd=checkout, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    killed = None
    seen = 0
    while killed is None and grading.poll() is None:
        found = _zygote_with_a_worker(grading.pid)
        seen = seen + 1 if found else 0
        if found is not None and (where == "import" or seen >= 25):  # a call: past the import, into the sleep
            os.kill(found, signal.SIGKILL)
            killed = found
        time.sleep(0.02)
    output, _ = grading.communicate(timeout=240)
    said = output.decode(errors="replace")[-3000:]
    assert killed is not None, f"the run ended before a zygote forked a worker:\n{said}"
    assert grading.returncode == 0, said
    tests = _report(report)["tests"]
    assert isinstance(tests, list) and {test["extra_data"]["challenge"] for test in tests} == {
        folder.split("/")[1] for folder in folders
    }
    assert all(test["status"] == "passed" for test in tests), said
