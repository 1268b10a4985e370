"""The kernel's own walls around a sandbox, beyond bubblewrap's mounts: a seccomp filter and a user
namespace of its own.

The filter (built with libseccomp, handed to `bwrap --seccomp`) refuses with `EPERM` what a tool loop
never needs and what would reach past the sandbox or into the next one: the kernel keyrings, tracing
(`ptrace`, `process_vm_*`, `perf_event_open`), `userfaultfd`, `bpf`, mounts, and namespace changes
(`unshare`, `setns`, a `clone` asking for a namespace; `clone3`, whose flags a filter cannot read,
answers `ENOSYS`, and the C library falls back to `clone`). System calls of another architecture
(32-bit calls on a 64-bit kernel) kill the process.

The user namespace: a grader running as root hands bubblewrap a fresh one (`bwrap --userns FD`) that
maps only root and the unprivileged user learner code runs as, each to itself. Learner processes are
that user to the kernel, as before, but their per-user kernel state (keyrings, counts) lives and dies
with this sandbox. bubblewrap's own `--unshare-user` cannot do this as root: it maps the sandbox's
user to the caller's, which would make learner code root to the kernel's file checks. A grader that
is not root uses `--unshare-user`, mapping its own user.
"""

from __future__ import annotations

import errno
import functools
import os
import subprocess
import tempfile
import time
from typing import Any

__all__ = ["DENIED", "MEMORY_LIMIT", "PROCESS_LIMIT", "caps_notice", "seccomp_filter", "user_namespace"]

MEMORY_LIMIT = 1 << 30
"""Bytes of memory a sandbox's processes may use together (cgroup v2, `_cgroups`), or else of address
space a worker may map (`RLIMIT_AS`, where a learner's runaway allocation fails with MemoryError): in
either case long before the machine runs short."""
PROCESS_LIMIT = 512
"""Processes and threads a sandbox may have at once (cgroup v2), or else the learner's user (per
sandbox under bubblewrap, whose user namespace counts its own; per user in the fallback): a fork
bomb stops there (`pids.max`, `RLIMIT_NPROC`)."""

DENIED = (
    "keyctl", "add_key", "request_key", "ptrace", "process_vm_readv", "process_vm_writev", "perf_event_open",
    "userfaultfd", "bpf", "mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "unshare", "setns",
)  # fmt: skip
"""System calls every sandboxed process is refused (`EPERM`)."""
_CLONE_NEW = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080)
"""CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME: `clone` with any is refused."""


def caps_notice(cpu: int, *, processes: bool, cgroups: bool, why: str = "") -> str:
    """How learner code is capped, for the run's first line. `cgroups`: memory and processes by a cgroup
    v2 of each sandbox's (`_cgroups`); else by rlimits, `processes` saying whether with the process cap,
    and `why` why not cgroup v2."""
    if cgroups:
        return (
            f"capped by cgroup v2 ({MEMORY_LIMIT >> 30} GiB of memory and {PROCESS_LIMIT} processes a sandbox) "
            f"and rlimits ({cpu} s of CPU a worker)"
        )
    count = f", {PROCESS_LIMIT} processes" if processes else ""
    because = f", not cgroup v2: {why}" if why else ""
    return f"capped by rlimits ({MEMORY_LIMIT >> 30} GiB of address space and {cpu} s of CPU a worker{count}){because}"


@functools.lru_cache(maxsize=1)
def seccomp_filter() -> bytes | str:
    """The filter as the BPF program `bwrap --seccomp` reads, or why it cannot be built here."""
    try:
        import pyseccomp as seccomp
    except ImportError:
        return "the `pyseccomp` package is not installed (`pip install pyseccomp`)"
    except (OSError, RuntimeError):  # the package is there, libseccomp is not
        return "libseccomp is not installed (Debian and Ubuntu: `apt-get install libseccomp2`)"
    rules: Any = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in DENIED:
        try:
            rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
        except (OSError, ValueError, RuntimeError):  # pragma: no cover - a call this kernel's headers lack
            continue
    for flag in _CLONE_NEW:
        rules.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    with tempfile.TemporaryFile() as exported:
        rules.export_bpf(exported)
        exported.seek(0)
        return bytes(exported.read())


def user_namespace(uid: int, gid: int) -> int:
    """A fresh user namespace, mapping root and `uid`/`gid` to themselves, as a file descriptor for
    `bwrap --userns`; the caller closes it. Needs root and util-linux's `unshare`. Raises `OSError`."""
    mine = os.stat("/proc/self/ns/user").st_ino
    holder = subprocess.Popen(
        ["unshare", "--user", "--", "cat"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert holder.stdin is not None
    try:
        deadline = time.monotonic() + 10
        while os.stat(f"/proc/{holder.pid}/ns/user").st_ino == mine:  # until `unshare` has made it
            if holder.poll() is not None or time.monotonic() > deadline:
                raise OSError(f"`unshare --user` could not make a user namespace (exit status {holder.poll()})")
            time.sleep(0.0005)
        for name, inner in (("uid_map", uid), ("gid_map", gid)):
            with open(f"/proc/{holder.pid}/{name}", "w", encoding="ascii") as mapping:
                mapping.write(f"0 0 1\n{inner} {inner} 1\n")
        return os.open(f"/proc/{holder.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        holder.stdin.close()
        try:
            holder.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover - `cat` ends with its input
            holder.kill()
            holder.wait()
