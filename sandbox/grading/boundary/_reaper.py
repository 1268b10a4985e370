"""The grader as the subreaper of learner code, for the fallback when grading as root.

Without bubblewrap the zygote is a process of the unprivileged user learner code runs as, so learner
code can kill it, and what it started then escapes the zygote's sweep. With the grader (root) as
Linux's "child subreaper", every such orphan comes back to the grader instead, and because learner
code is the only thing of ours running as that user, the grader can tell which of its children to
kill at the end: those of that uid.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

__all__ = ["become_subreaper", "children", "sweep_children"]

_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
            pass


def sweep_children(uid: int, seconds: float = 10.0) -> None:
    """Kill (and reap) every child of this process running as `uid`, until none is left."""
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        found = _children(uid)
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in found:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        time.sleep(0.01)


def children() -> list[tuple[int, bytes]]:
    """This process's children, orphans that came back to it included, each with its state letter
    (`b"Z"` for a zombie), from Linux's /proc; elsewhere, none known."""
    me = os.getpid()
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and int(fields[1]) == me:
            found.append((int(entry), fields[0]))
    return found


def _children(uid: int) -> list[int]:
    found = []
    for pid, state in children():
        if state == b"Z" and _reaped(pid):
            continue
        try:
            if _uid(pid) == uid:
                found.append(pid)
        except OSError:
            continue
    return found


def _uid(pid: int) -> int | None:
    """The real uid, from `status`: a non-dumpable process's /proc folder is root's whoever runs it."""
    with open(f"/proc/{pid}/status", "rb") as status:
        for line in status:
            if line.startswith(b"Uid:"):
                return int(line.split()[1])
    return None


def _reaped(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:
        return True
