"""The zygote: the process that forks the workers running learner code, apart from the grader.

    grader (pytest) --control socket--> zygote --fork--> worker, one per challenge
                                                          imports the learner's module once
                                                          runs each call the grader sends
                                                          answers with data

The zygote imports skyl, httpx and this module once, then forks a worker per challenge: a fork is
a few milliseconds where a fresh interpreter is half a second, and the zygote never runs learner
code, so every worker starts clean. A worker starts a session of its own (the grader kills its
whole process group), takes the memory, CPU and core-file limits, and serves `load` and `call`
messages on its socket until the grader closes it.

The zygote is Linux's "child subreaper" for everything below it: a process a learner detaches
(double fork, `setsid`) comes back to the zygote when its parent dies, and the zygote kills it
before the grader writes its last report.
"""

from __future__ import annotations

import ctypes
import os
import resource
import selectors
import signal
import socket
import sys
import time
import traceback
from collections.abc import Iterable
from typing import Any

from ...wire import PROVIDERS, get_wire_format
from ..boundary._protocol import FrameBuffer, send
from ..boundary._reaper import become_subreaper, children
from ._worker import Worker

__all__ = ["main"]

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PRELOAD = (
    "asyncio", "collections", "concurrent.futures", "contextlib", "copy", "dataclasses", "datetime", "decimal",
    "encodings.ascii", "encodings.idna", "encodings.latin_1", "encodings.utf_8", "enum", "fractions", "functools",
    "heapq", "inspect", "itertools", "json", "linecache", "logging", "math", "operator", "pprint", "random", "re",
    "statistics", "string", "stringprep", "textwrap", "threading", "time", "traceback", "typing", "unicodedata",
    "uuid",
)  # fmt: skip
"""What learner code commonly imports, loaded before the zygote gives up root: in the fallback, an
interpreter installed under a folder only root can read (`/root/.pyenv`) has no more to give after."""


def main() -> None:
    """The zygote: `python -I -u -c "...; main()" CONTROL_FD [UID GID]`, started by `_runner.Zygote`.

    Under bubblewrap it is the sandbox's first process: learner code cannot signal it, and when it
    ends, the kernel ends everything in the sandbox with it."""
    control = socket.socket(fileno=int(sys.argv[1]))
    become_subreaper()
    for provider in PROVIDERS:  # imported once here, not again in every worker that meets it
        get_wire_format(provider)
    user = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else None
    if user is not None:
        _preload()
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # die with the grader
    # Under bubblewrap the kernel keeps from pid 1 every signal it has no handler for; Python's
    # SIGINT handler would let learner code end the zygote with `os.kill(1, SIGINT)`.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    workers: set[int] = set()
    buffer = FrameBuffer()
    watched = selectors.DefaultSelector()  # the control socket's descriptor number may be past 1,024
    watched.register(control, selectors.EVENT_READ)
    watched.register(wake_read, selectors.EVENT_READ)
    private = [control.fileno(), wake_read, wake_write, watched.fileno()]  # closed in every worker
    send(control, {"op": "ready"})
    try:
        while True:
            readable = [key.fd for key, _ in watched.select()]
            if wake_read in readable:
                os.read(wake_read, 4096)
                _reap(control, workers)
            if control.fileno() not in readable:
                continue
            data, fds, _, _ = socket.recv_fds(control, 1 << 16, 8)
            if not data or not _obey(control, buffer.feed(data), fds, workers, private, user):
                break
    finally:
        _sweep(workers)
    # Ended cleanly, every worker dead: nothing is left to tear down that the kernel does not. The
    # interpreter's own teardown (the modules it preloaded for the workers) took a tenth of a second
    # that the grader waited through at the end of every run.
    sys.stderr.flush()
    os._exit(0)


def _obey(
    control: socket.socket,
    messages: Iterable[dict[str, Any]],
    fds: list[int],
    workers: set[int],
    private: list[int],
    user: tuple[int, int] | None,
) -> bool:
    """Carry out the grader's messages; False once told to shut down."""
    for message in messages:
        if message["op"] == "spawn":
            pid = _fork(fds, message, private, user)
            workers.add(pid)
            send(control, {"op": "spawned", "pid": pid})
        elif message["op"] == "kill" and message.get("pid") in workers:
            _kill_group(int(message["pid"]))
        elif message["op"] == "shutdown":
            _sweep(workers)
            send(control, {"op": "bye"})
            return False
    return True


def _preload() -> None:
    """Load what learner code commonly imports while the zygote is root (see `_PRELOAD`)."""
    import importlib

    for name in _PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:  # pragma: no cover - a trimmed-down interpreter
            pass


def _drop_root(uid: int, gid: int) -> None:
    """In a worker, before any learner code exists: become the unprivileged user learner code runs as,
    for good. It then cannot trace or signal the grader or the zygote (which stays root and runs no
    learner code), nor write what only root may."""
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # no one of the same user traces it


def _reap(control: socket.socket, workers: set[int]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in workers:
            workers.discard(pid)
            send(control, {"op": "exited", "pid": pid, "status": status})


def _sweep(workers: set[int]) -> None:
    """Kill every worker's process group, then every process that came back to us, until none is left."""
    for pid in workers:
        _kill_group(pid)
    workers.clear()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for pid, _state in children():  # orphans that came back to us included
            _kill_group(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.01)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _fork(fds: list[int], message: dict[str, Any], inherited: list[int], user: tuple[int, int] | None) -> int:
    connection, stdout, stderr = fds
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        return pid
    code = 70
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if user is not None:
            _drop_root(*user)
        for fd in inherited:
            os.close(fd)
        os.dup2(stdout, 1)
        os.dup2(stderr, 2)
        os.close(stdout)
        os.close(stderr)
        _limit(message["limits"])
        Worker(socket.socket(fileno=connection)).serve()
        code = 0
    except BaseException:  # noqa: BLE001 - the worker's own failure, shown to the grader on its stderr
        traceback.print_exc()
    finally:
        os._exit(code)


def _limit(limits: dict[str, int | None]) -> None:
    """Caps the learner cannot raise: soft and hard limits alike (a cap of None is not set)."""
    caps = [("RLIMIT_AS", limits["memory"]), ("RLIMIT_CPU", limits["cpu"]), ("RLIMIT_CORE", 0)]
    for name, value in [*caps, ("RLIMIT_NPROC", limits.get("processes"))]:
        which = getattr(resource, name, None)
        if which is None or value is None:  # pragma: no cover - a platform without this limit
            continue
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):  # pragma: no cover - macOS refuses some address-space limits
            pass
