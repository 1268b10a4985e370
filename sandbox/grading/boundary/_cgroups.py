"""Memory and process caps for each sandbox through cgroup v2, where the grader may make cgroups.

Each sandbox (a zygote and its workers, or one run of a program) gets a cgroup of its own below the
grader's: `memory.max` and `pids.max` cap all its processes together, and `memory.swap.max` = 0
(where the kernel accounts swap) keeps it from swapping past the cap. Its first process enters the
cgroup before it runs anything else (`SandboxCgroup.command`), so every process of the sandbox starts
inside; once the sandbox has ended, whatever is left in it is killed and the cgroup removed.

The grader's cgroup must be on a cgroup2 file system, offer the `memory` and `pids` controllers, and
be writable by the grader (as root, or delegated to its user). Elsewhere (cgroup v1, or a hybrid
hierarchy that keeps those controllers in v1; a read-only mount in a container) `find_base` says
why, and the rlimits of `_confine` cap learner code instead. The kernel's "no internal processes"
rule: a cgroup that hands controllers to its children holds no processes itself, so a grader alone
in its cgroup first moves into a leaf (`LEAF`) beside the sandboxes' cgroups; a grader that shares
its cgroup with other processes leaves them where they are, and uses rlimits.

Touches only the cgroup file system: the grader's cgroup, its leaf, and the cgroups it makes.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import os
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["LEAF", "SandboxCgroup", "cgroup_base", "delegate", "find_base"]

LEAF = "sandbox-grader"
"""The cgroup a grader moves into when its own cgroup is to hand controllers to the sandboxes'."""
_NEEDED = ("memory", "pids")
_MADE = itertools.count(1)


def find_base(root: Path | None = None, *, membership: str | None = None) -> Path | str:
    """The cgroup the sandboxes' cgroups are to be made in, or why cgroup v2 cannot cap them here
    (a phrase that follows "not cgroup v2: "). Reads only.

    `root`: where the cgroup2 file system is mounted (None: the one `/proc/self/mounts` lists).
    `membership`: the grader's cgroups, in the form of `/proc/self/cgroup` (None: that file). The
    cgroup is the grader's own, or the one above it when the grader sits in `LEAF`."""
    if membership is None:
        membership = _read(Path("/proc/self/cgroup")) or ""
    own, v1 = _parse(membership)
    if root is None:
        root = _mount()
    if root is None or own is None:
        held = f": {' and '.join(v1)} are in cgroup v1 here" if v1 else ""
        return f"this machine has no cgroup2 file system for this process{held}"
    if ".." in own.split("/"):
        return f"the grader's cgroup ({own}) is outside its cgroup namespace"
    base = root / own.lstrip("/")
    if base.name == LEAF:  # a grader that moved (`delegate`), or a process it started
        base = base.parent
    offered = _read(base / "cgroup.controllers")
    if offered is None:
        return f"the grader's cgroup ({own}) is not under the cgroup2 file system at {root}"
    missing = [name for name in _NEEDED if name not in offered.split()]
    if missing:
        where = f"; {' and '.join(v1)} are in cgroup v1 here (a hybrid hierarchy)" if v1 else ""
        listed = ", ".join(offered.split()) or "none"
        return f"the grader's cgroup {base} offers no {' or '.join(missing)} controller (it offers: {listed}){where}"
    if not all(os.access(path, os.W_OK) for path in (base, base / "cgroup.subtree_control", base / "cgroup.procs")):
        return (
            f"the grader's cgroup {base} is not writable by the grader (run it as root with the cgroup2 file "
            "system mounted read-write, or in a cgroup delegated to it: `systemd-run --scope -p Delegate=yes ...`)"
        )
    return base


def delegate(base: Path) -> None:
    """Have `base` hand the memory and pids controllers to the cgroups made in it. A grader alone in
    `base` moves into `base/LEAF` first (the "no internal processes" rule). Removes the empty cgroups
    of graders that were killed. Raises `OSError` saying why when `base` holds other processes, or
    the kernel refuses."""
    enabled = (_read(base / "cgroup.subtree_control") or "").split()
    if not all(name in enabled for name in _NEEDED):
        _enable(base)
    for stale in base.glob("sandbox-*-*"):
        pid = stale.name.split("-")[1]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            with contextlib.suppress(OSError):
                os.rmdir(stale)


def _enable(base: Path) -> None:
    me = str(os.getpid())
    held = (_read(base / "cgroup.procs") or "").split()
    if any(pid != me for pid in held):
        raise OSError(
            f"other processes share the grader's cgroup {base} (pids {' '.join(held[:5])}): start the grader "
            "in a cgroup of its own (`systemd-run --scope -p Delegate=yes pytest ...`, or `exec pytest ...` "
            "as a container's first process)"
        )
    leaf = base / LEAF
    if held:
        leaf.mkdir(exist_ok=True)
        _write(leaf / "cgroup.procs", me)
    try:
        _write(base / "cgroup.subtree_control", " ".join(f"+{name}" for name in _NEEDED))
    except OSError as error:
        if held:  # back where it was, as it was
            _write(base / "cgroup.procs", me)
            with contextlib.suppress(OSError):
                leaf.rmdir()
        raise OSError(f"the kernel refused to delegate {base}: {error.strerror or error}") from None


@functools.lru_cache(maxsize=1)
def cgroup_base() -> Path | str:
    """`find_base` on this machine, delegated: where this grader makes its sandboxes' cgroups, or why
    rlimits cap learner code instead. Found once per process."""
    found = find_base()
    if isinstance(found, Path):
        try:
            delegate(found)
        except OSError as error:
            return str(error)
    return found


class SandboxCgroup:
    """One sandbox's cgroup, made in `base` with its caps, entered by the sandbox's first process,
    removed after (`remove`). Raises `OSError` when it cannot be made."""

    def __init__(self, base: Path, *, memory: int, processes: int) -> None:
        self.path = base / f"sandbox-{os.getpid()}-{next(_MADE)}"
        self.path.mkdir()
        try:
            _write(self.path / "memory.max", str(memory))
            if (self.path / "memory.swap.max").exists():  # absent where the kernel does not account swap
                _write(self.path / "memory.swap.max", "0")
            _write(self.path / "pids.max", str(processes))
        except OSError:
            self.remove()
            raise

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv`, started inside this cgroup: a shell moves itself in, then becomes `argv` (the same
        process, with the same descriptors), so nothing of the sandbox ever runs outside it."""
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.path / "cgroup.procs"), *argv]

    def oom_kills(self) -> int:
        """How many of the sandbox's processes the kernel has killed so far for going over its memory cap."""
        for line in (_read(self.path / "memory.events") or "").splitlines():
            name, _, count = line.partition(" ")
            if name == "oom_kill" and count.strip().isdigit():
                return int(count)
        return 0

    def remove(self) -> None:
        """Kill whatever is left in the cgroup (the sandbox has ended), then remove it. Idempotent."""
        with contextlib.suppress(OSError):
            if (self.path / "cgroup.kill").exists():
                _write(self.path / "cgroup.kill", "1")
        for _ in range(200):
            try:
                self.path.rmdir()
            except FileNotFoundError:
                return
            except OSError as error:
                if error.errno != errno.EBUSY:  # pragma: no cover - another owner's cgroup, or not a cgroup
                    return
                time.sleep(0.005)  # its last processes are still exiting
            else:
                return


def _parse(membership: str) -> tuple[str | None, list[str]]:
    """The process's cgroup v2 path (the `0::` line), and which of the needed controllers cgroup v1 holds."""
    own, v1 = None, []
    for line in membership.splitlines():
        number, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if number == "0" and not controllers:
            own = path
        else:
            v1 += [name for name in controllers.split(",") if name in _NEEDED]
    return own, sorted(set(v1), key=_NEEDED.index)


def _mount() -> Path | None:
    """Where the cgroup2 file system is mounted, from `/proc/self/mounts`."""
    for line in (_read(Path("/proc/self/mounts")) or "").splitlines():
        fields = line.split()
        if len(fields) > 2 and fields[2] == "cgroup2":
            return Path(fields[1])
    return None


def _read(path: Path) -> str | None:
    """The text of a file, or None when it cannot be read."""
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except OSError:
        return None


def _write(path: Path, text: str) -> None:
    """One write, as the kernel's interface files want it."""
    with open(path, "w", encoding="ascii") as file:
        file.write(text)
