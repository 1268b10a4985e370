"""Memory and process caps through cgroup v2 where the machine has it, rlimits otherwise, and the run's
first line saying which: tested against a folder laid out like a cgroup2 file system (the kernel's
part, making and removing a cgroup's files, played by the `cgroupfs` fixture), and against this
machine's own layout."""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sandbox.grading.boundary._cgroups import LEAF, SandboxCgroup, delegate, find_base
from sandbox.grading.boundary._confine import MEMORY_LIMIT, PROCESS_LIMIT
from sandbox.grading.boundary._isolation import Isolation, choose
from sandbox.grading.boundary._program import run_program
from sandbox.grading.boundary._runner import WorkerDied, WorkerProcess, Zygote

MADE = {"cgroup.procs": "", "memory.max": "max", "memory.swap.max": "max", "pids.max": "max", "cgroup.kill": ""}
"""The files the kernel gives a new cgroup (those the grader touches)."""


@dataclass
class Cgroupfs:
    root: Path
    base: Path
    """The grader's cgroup."""
    oom_kill: int = 0
    """What a new cgroup's `memory.events` says of processes killed for want of memory."""


@pytest.fixture
def cgroupfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cgroupfs]:
    """A cgroup2 file system in a folder, holding the grader's cgroup `grading` (memory and pids on
    offer, this process in it). As the kernel does, making a cgroup there gives it its files, and a
    cgroup is removed only once nothing is left in it."""
    root = tmp_path / "cgroup"
    base = root / "grading"
    fake = Cgroupfs(root, base)
    base.mkdir(parents=True)
    (base / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids\n")
    (base / "cgroup.subtree_control").write_text("")
    (base / "cgroup.procs").write_text(f"{os.getpid()}\n")
    real_mkdir, real_rmdir = os.mkdir, os.rmdir

    def mkdir(path: str | os.PathLike[str], mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        real_mkdir(path, mode, dir_fd=dir_fd)
        if Path(path).is_relative_to(root):
            for name, text in {**MADE, "memory.events": f"oom {fake.oom_kill}\noom_kill {fake.oom_kill}\n"}.items():
                (Path(path) / name).write_text(text)

    def rmdir(path: str | os.PathLike[str], *, dir_fd: int | None = None) -> None:
        if not Path(path).is_relative_to(root):
            return real_rmdir(path, dir_fd=dir_fd)
        held = (Path(path) / "cgroup.procs").read_text().split()
        if held and (Path(path) / "cgroup.kill").read_text() != "1":
            raise OSError(errno.EBUSY, "Device or resource busy", str(path))
        for name in os.listdir(path):  # the kernel's files go with the cgroup
            os.unlink(Path(path) / name)
        real_rmdir(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "rmdir", rmdir)
    yield fake


def made(base: Path) -> list[Path]:
    return sorted(base.glob("sandbox-*"))


def test_a_delegated_cgroup_is_where_the_sandboxes_go(cgroupfs: Cgroupfs) -> None:
    assert find_base(cgroupfs.root, membership="0::/grading\n") == cgroupfs.base


@pytest.mark.parametrize(
    ("membership", "controllers", "why"),
    [
        (
            "9:name=systemd:/\n8:pids:/\n4:memory:/x\n0::/\n",
            "hugetlb\n",
            r"the grader's cgroup \S+ offers no memory or pids controller \(it offers: hugetlb\); memory and pids "
            r"are in cgroup v1 here \(a hybrid hierarchy\)",
        ),
        ("0::/\n", "cpu memory\n", r"offers no pids controller \(it offers: cpu, memory\)$"),
        ("8:pids:/\n4:memory:/\n", "", r"no cgroup2 file system for this process: memory and pids are in cgroup v1"),
        ("0::/../../elsewhere\n", "", r"the grader's cgroup \(/../../elsewhere\) is outside its cgroup namespace"),
        ("0::/gone\n", "", r"the grader's cgroup \(/gone\) is not under the cgroup2 file system at "),
    ],
    ids=["hybrid", "no-pids", "v1-only", "outside-namespace", "not-mounted-here"],
)
def test_without_memory_and_pids_in_cgroup_v2_rlimits_cap_and_the_reason_is_said(
    tmp_path: Path, membership: str, controllers: str, why: str
) -> None:
    (tmp_path / "cgroup.controllers").write_text(controllers)
    found = find_base(tmp_path, membership=membership)
    assert isinstance(found, str)
    assert re.search(why, found), found


def test_this_machines_own_layout_is_detected(tmp_path: Path) -> None:
    found = find_base()
    offered = Path("/sys/fs/cgroup/unified/cgroup.controllers")
    if isinstance(found, Path) or not offered.exists():
        pytest.skip(f"not the hybrid layout this test describes: {found}")
    listed = ", ".join(offered.read_text().split()) or "none"
    assert found.startswith("the grader's cgroup /sys/fs/cgroup/unified"), found
    assert f"(it offers: {listed}); memory and pids are in cgroup v1 here (a hybrid hierarchy)" in found
    notice = choose("process").notice()
    rlimits = r"capped by rlimits \(1 GiB of address space and 120 s of CPU a worker(, 512 processes)?\)"
    assert re.search(rlimits, notice), notice
    assert f"), not cgroup v2: {found};" in notice


def test_a_grader_alone_in_its_cgroup_moves_into_a_leaf_and_delegates(cgroupfs: Cgroupfs) -> None:
    base = cgroupfs.base
    delegate(base)
    assert (base / "cgroup.subtree_control").read_text() == "+memory +pids"
    assert (base / LEAF / "cgroup.procs").read_text() == str(os.getpid())
    # The grader (or a process it starts) now sits in the leaf: its sandboxes still go beside it.
    assert find_base(cgroupfs.root, membership=f"0::/grading/{LEAF}\n") == base


def test_a_cgroup_already_delegated_is_used_as_it_is_less_what_killed_graders_left(cgroupfs: Cgroupfs) -> None:
    base = cgroupfs.base
    (base / "cgroup.subtree_control").write_text("cpu memory pids\n")
    (base / "cgroup.procs").write_text("")
    (base / f"sandbox-{os.getpid()}-1").mkdir()
    (base / f"sandbox-{2**22 + 1}-1").mkdir()  # past the kernel's largest pid: its grader is gone
    delegate(base)
    assert (base / "cgroup.subtree_control").read_text() == "cpu memory pids\n"
    assert not (base / LEAF).exists()
    assert made(base) == [base / f"sandbox-{os.getpid()}-1"]


def test_a_cgroup_shared_with_other_processes_is_left_alone(cgroupfs: Cgroupfs) -> None:
    base = cgroupfs.base
    (base / "cgroup.procs").write_text(f"1\n{os.getpid()}\n")
    with pytest.raises(OSError, match=r"other processes share the grader's cgroup .* \(pids 1 \d+\): start the grader"):
        delegate(base)
    assert (base / "cgroup.subtree_control").read_text() == ""
    assert not (base / LEAF).exists()


def test_a_sandbox_cgroup_is_capped_entered_by_the_process_its_command_runs_in_and_removed(
    cgroupfs: Cgroupfs, tmp_path: Path
) -> None:
    cgroup = SandboxCgroup(cgroupfs.base, memory=MEMORY_LIMIT, processes=PROCESS_LIMIT)
    caps = {name: (cgroup.path / name).read_text() for name in ("memory.max", "memory.swap.max", "pids.max")}
    assert caps == {"memory.max": "1073741824", "memory.swap.max": "0", "pids.max": "512"}
    printed = tmp_path / "pid"
    assert os.spawnv(os.P_WAIT, "/bin/sh", cgroup.command(["/bin/sh", "-c", f"echo $$ > {printed}"])) == 0
    assert (cgroup.path / "cgroup.procs").read_text().strip() == printed.read_text().strip()
    cgroup.remove()
    assert (cgroupfs.base / "cgroup.procs").exists() and not cgroup.path.exists()


@pytest.mark.slow
def test_each_zygote_gets_a_cgroup_of_its_own_and_an_out_of_memory_death_is_explained(
    cgroupfs: Cgroupfs, tmp_path: Path
) -> None:
    base = cgroupfs.base
    module = tmp_path / "learner.py"
    module.write_text("import os, resource\ndef limits():\n    return resource.getrlimit(resource.RLIMIT_AS)\n")
    zygote = Zygote(Isolation(False, cgroups=base))
    try:
        [cgroup] = made(base)
        [pid] = (cgroup / "cgroup.procs").read_text().split()
        assert b"_zygote" in Path(f"/proc/{pid}/cmdline").read_bytes(), "the zygote itself is in the cgroup"
        worker = WorkerProcess(zygote)
        assert worker.request({"op": "load", "path": str(module), "shown_as": "learner.py"}, 30)["op"] == "loaded"
        # The kernel's OOM killer: a SIGKILL, counted in the cgroup's memory.events.
        (cgroup / "memory.events").write_text("oom 1\noom_kill 1\n")
        os.kill(worker.pid, 9)
        with pytest.raises(WorkerDied, match=r"killed by SIGKILL \(your code ran out of its sandbox's 1 GiB of memory"):
            worker.request({"op": "call", "function": "limits", "args": []}, 30)
    finally:
        zygote.close()
    assert made(base) == [], "the sandbox's cgroup is removed with it"


@pytest.mark.slow
def test_a_worker_under_a_cgroup_has_no_address_space_rlimit(cgroupfs: Cgroupfs, tmp_path: Path) -> None:
    module = tmp_path / "learner.py"
    module.write_text("import resource\ndef limits():\n    return list(resource.getrlimit(resource.RLIMIT_AS))\n")
    message = {"op": "call", "function": "limits", "args": [], "base": "http://127.0.0.1:9/x", "provider": "openai"}
    found = []
    for isolation in (Isolation(False, cgroups=cgroupfs.base), Isolation(False)):
        zygote = Zygote(isolation)
        try:
            worker = WorkerProcess(zygote)
            worker.request({"op": "load", "path": str(module), "shown_as": "learner.py"}, 30)
            found.append(worker.request({**message, "mode": "sync"}, 30)["value"])
            worker.close()
        finally:
            zygote.close()
    assert str(MEMORY_LIMIT) not in str(found[0]) and str(MEMORY_LIMIT) in str(found[1])


def test_a_program_out_of_memory_is_explained(cgroupfs: Cgroupfs) -> None:
    cgroupfs.oom_kill = 1
    killed = [sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"]
    run = run_program(killed, os.environ, 30, isolation=Isolation(False, cgroups=cgroupfs.base))
    assert run.exit_description == "killed by signal SIGKILL after its sandbox ran out of its 1 GiB of memory"
    assert made(cgroupfs.base) == []


@pytest.mark.parametrize(
    ("isolation", "caps"),
    [
        (
            Isolation(False, cgroups=Path("/sys/fs/cgroup/grading")),
            "capped by cgroup v2 (1 GiB of memory and 512 processes a sandbox) and rlimits (120 s of CPU a worker);",
        ),
        (
            Isolation(False, rlimits_why="no cgroup2 file system for this process"),
            "capped by rlimits (1 GiB of address space and 120 s of CPU a worker), not cgroup v2: no cgroup2 file "
            "system for this process;",
        ),
    ],
    ids=["cgroup-v2", "rlimits"],
)
def test_the_runs_first_line_says_which_caps(isolation: Isolation, caps: str) -> None:
    assert caps in isolation.notice()
