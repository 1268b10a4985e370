"""Run learner code in worker processes, from the grader's side: spawn, send, wait, kill.

Learner code never runs in the grader's process: a `WorkerProcess` (forked by the `Zygote`, see `learner._zygote`)
imports the learner's module and runs each call; the grader waits for its answer under a deadline
and kills the worker's whole process group when it passes. A worker that dies, hangs or answers
nonsense fails the test it was serving; the next test gets a fresh one. What the learner's code
prints is read as it comes, kept to a readable size, and handed to the test that ran it.
"""

from __future__ import annotations

import errno
import os
import queue
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sandbox

from ._cgroups import SandboxCgroup
from ._confine import MEMORY_LIMIT, PROCESS_LIMIT
from ._isolation import INSIDE, Isolation, collector_hidden
from ._output import CPU_LIMIT, OUTPUT_LIMIT, Capture, describe_exit, show_output
from ._protocol import ANSWER_LIMIT, BrokenFrame, FrameBuffer, encode, send

__all__ = [
    "CPU_LIMIT",
    "INSIDE",
    "MEMORY_LIMIT",
    "OUTPUT_LIMIT",
    "Outcome",
    "TimedOut",
    "WorkerProcess",
    "WorkerDied",
    "WorkerError",
    "Zygote",
    "describe_exit",
    "show_output",
]

_STARTUP = 60.0
_KEEP = (
    "PATH", "HOME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TMPDIR", "TEMP", "TMP", "SYSTEMROOT", "TZ",
)  # fmt: skip


@dataclass(frozen=True)
class Outcome:
    """What the learner's call did: returned `value`, or raised `error`."""

    value: Any = None
    error: BaseException | None = None


class WorkerError(Exception):
    """The worker machinery itself failed (the grader's fault or the machine's, never the learner's)."""


class TimedOut(Exception):
    """The worker did not answer in time; it has been killed."""


class WorkerDied(Exception):
    """The worker ended (or broke its protocol) before answering; the message says how."""


def _environment() -> dict[str, str]:
    """What a worker inherits: enough for Python to run, and nothing of the grader's (no options, no paths)."""
    kept = {name: value for name, value in os.environ.items() if name in _KEEP}
    return {**kept, "MALLOC_ARENA_MAX": "2"}


class Zygote:
    """The process that forks workers (see `learner._zygote`). Start it early: it imports skyl once for all."""

    def __init__(
        self, isolation: Isolation | None = None, *, reading: bool = True, beside: Zygote | None = None
    ) -> None:
        """`reading=False`: a spare for a forked grader (`spare_zygote`), which reads its messages itself.
        `beside`: under bubblewrap, a zygote for the challenges that take skyl's collector away, whose
        sandbox lacks it (`collector_hidden`), sharing the endpoint sockets of `beside`."""
        self.isolation = isolation or Isolation(False)
        if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):  # pragma: no cover - Windows
            raise WorkerError(
                "grading runs learner code in worker processes, which needs a POSIX system: Linux, macOS, or "
                "WSL on Windows."
            )
        # Cleaned up by whichever of two graders gets there last, for a spare (`spare_zygote`).
        self._home = tempfile.TemporaryDirectory(prefix="sandbox-grading-", ignore_cleanup_errors=True)
        home = Path(self._home.name)
        self.sockets: Path = beside.sockets if beside is not None else home / "sockets"
        """Where endpoints put the Unix sockets a sandboxed worker reaches them by (`INSIDE/sockets`)."""
        self.sockets.mkdir(exist_ok=True)
        for folder in (home, self.sockets):
            folder.chmod(0o755)  # for the unprivileged user learner code runs as, when the grader is root
        package = Path(sandbox.__file__).resolve().parent
        mine, theirs = socket.socketpair()
        who = [str(self.isolation.uid), str(self.isolation.gid)] if self.isolation.uid is not None else []
        if self.isolation.sandboxed:
            # The only thing on the workers' path: the package, not the folder around it (solutions/, tests/).
            path, ro = INSIDE, [(str(package), f"{INSIDE}/sandbox"), (str(self.sockets), f"{INSIDE}/sockets")]
            if beside is not None:
                ro += collector_hidden(package, home)
        else:
            path, ro = str(home), []
            (home / "sandbox").symlink_to(package, target_is_directory=True)
        code = f"import sys; sys.path.insert(0, {path!r}); from sandbox.grading.learner._zygote import main; main()"
        command = [sys.executable, "-I", "-u", "-c", code, str(theirs.fileno()), *who]
        self._errors = tempfile.TemporaryFile()
        inside: AbstractContextManager[tuple[list[str], list[int]]]
        inside = self.isolation.bwrap(command, ro=ro) if self.isolation.sandboxed else nullcontext((command, []))
        self._cgroup: SandboxCgroup | None = None
        """The sandbox's own cgroup, capping its memory and processes (None: rlimits cap each worker)."""
        try:
            if self.isolation.cgroups is not None:
                self._cgroup = SandboxCgroup(self.isolation.cgroups, memory=MEMORY_LIMIT, processes=PROCESS_LIMIT)
            with inside as (argv, fds):
                self._process = subprocess.Popen(
                    self._cgroup.command(argv) if self._cgroup is not None else argv,
                    pass_fds=[theirs.fileno(), *fds],
                    cwd=home,
                    env=_environment(),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=self._errors,
                    start_new_session=True,  # Ctrl-C stops pytest, which then closes the zygote in order
                )
        except OSError as exc:
            if self._cgroup is not None:
                self._cgroup.remove()
            raise WorkerError(f"the grader could not start its worker process: {exc}") from None
        finally:
            theirs.close()
        self._control = mine
        self._ready = threading.Event()
        self._ended = threading.Event()
        self._spawned: queue.Queue[int] = queue.Queue()
        self._statuses: dict[int, int] = {}
        self._changed = threading.Condition()
        self._lock = threading.Lock()
        self._sending = threading.Lock()
        self._reader = threading.Thread(target=self._read, name="sandbox-grading-zygote", daemon=True)
        if reading:
            self._reader.start()

    def _read(self) -> None:
        buffer = FrameBuffer(ANSWER_LIMIT)
        try:
            while True:
                data = self._control.recv(1 << 16)
                if not data:
                    break
                for message in buffer.feed(data):
                    if message["op"] == "ready":
                        self._ready.set()
                    elif message["op"] == "spawned":
                        self._spawned.put(int(message["pid"]))
                    elif message["op"] == "exited":
                        with self._changed:
                            self._statuses[int(message["pid"])] = int(message["status"])
                            self._changed.notify_all()
        except (OSError, BrokenFrame):
            pass
        finally:
            self._ended.set()
            with self._changed:
                self._changed.notify_all()

    def spawn(self) -> tuple[int, socket.socket, int, int]:
        """A fresh worker: its pid, the socket to talk to it, and the read ends of its stdout and stderr."""
        with self._lock:
            if not self._ready.wait(_STARTUP) or self._ended.is_set():
                raise WorkerError(f"the grader's worker process did not start:\n{self._stderr()}")
            mine, theirs = socket.socketpair()
            out_read, out_write = os.pipe()
            err_read, err_write = os.pipe()
            # A process cap counts every process of the user: only where that user is the learner's alone.
            # Under a cgroup of the sandbox's own, that cgroup caps memory and processes instead.
            alone = self.isolation.sandboxed or self.isolation.uid is not None
            rlimited = self._cgroup is None
            limits = {
                "memory": MEMORY_LIMIT if rlimited else None,
                "cpu": CPU_LIMIT,
                "processes": PROCESS_LIMIT if alone and rlimited else None,
            }
            try:
                with self._sending:
                    socket.send_fds(
                        self._control,
                        [encode({"op": "spawn", "limits": limits})],
                        [theirs.fileno(), out_write, err_write],
                    )
                pid = self._spawned.get(timeout=_STARTUP)
            except (OSError, queue.Empty) as exc:
                for fd in (out_read, err_read):
                    os.close(fd)
                mine.close()
                raise WorkerError(f"the grader could not start a worker process ({exc}):\n{self._stderr()}") from None
            finally:
                theirs.close()
                os.close(out_write)
                os.close(err_write)
            return pid, mine, out_read, err_read

    def status(self, pid: int, wait: float) -> int | None:
        """The wait status of worker `pid` once it ended, as the zygote reaped it."""
        deadline = time.monotonic() + wait
        with self._changed:
            while pid not in self._statuses and not self._ended.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._changed.wait(left)
            return self._statuses.pop(pid, None)

    @property
    def alive(self) -> bool:
        return not self._ended.is_set()

    def oom_kills(self) -> int:
        """How many processes of this sandbox the kernel killed so far for going over its memory cap."""
        return self._cgroup.oom_kills() if self._cgroup is not None else 0

    def kill(self, pid: int) -> None:
        """Kill worker `pid`'s process group. Under bubblewrap its pid is the sandbox's, which only the
        zygote (the sandbox's first process, which learner code cannot signal) can name."""
        if not self.isolation.sandboxed:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            return
        try:
            with self._sending:
                send(self._control, {"op": "kill", "pid": pid})
        except OSError:
            pass

    def close(self) -> None:
        """Kill every worker and everything they started, then the zygote."""
        if self._control.fileno() == -1:
            return
        try:
            send(self._control, {"op": "shutdown"})
        except OSError:
            pass
        self._ended.wait(30)
        self._control.close()
        self.reap()

    def start_reading(self) -> None:
        """For a zygote made with `reading=False`, in the process that will use it."""
        self._reader.start()

    @property
    def let_go_of(self) -> bool:
        return self._control.fileno() == -1

    def let_go(self) -> None:
        """Close this process's copy of the control socket, leaving the zygote to another process that holds
        one (a forked grader, see `_zygotes`); it ends when that one closes it."""
        self._control.close()

    def reap(self) -> None:
        """Wait for the zygote's process to end (its control socket closed), and clean up after it."""
        try:
            self._process.wait(30)
        except subprocess.TimeoutExpired:  # pragma: no cover - a zygote stuck in its sweep
            self._process.kill()
            self._process.wait()
        if self._reader.is_alive():
            self._reader.join(5)
        if self._cgroup is not None:
            self._cgroup.remove()
        self._errors.close()
        self._home.cleanup()

    def _stderr(self) -> str:
        self._errors.seek(0)
        return self._errors.read()[-3000:].decode(errors="replace")


class WorkerProcess:
    """One worker process, serving one learner module."""

    def __init__(self, zygote: Zygote) -> None:
        self._zygote = zygote
        self._oom_kills = zygote.oom_kills()
        self.pid, self._connection, out, err = zygote.spawn()
        self._stdout, self._stderr = Capture(out), Capture(err)
        self._buffer = FrameBuffer(ANSWER_LIMIT)
        self._pending: list[dict[str, Any]] = []
        self.functions: dict[str, bool] = {}
        """The learner module's callables, and whether each is `async def`: set once it is loaded."""
        self.alive = True

    def request(self, message: dict[str, Any], seconds: float) -> dict[str, Any]:
        """Send `message`, and return the answer. Raises `TimedOut` (the worker is killed) or `WorkerDied`."""
        try:
            send(self._connection, message)
        except OSError:
            raise WorkerDied(self._death()) from None
        deadline = time.monotonic() + seconds
        with selectors.DefaultSelector() as watched:  # any descriptor number, however many the grader holds
            watched.register(self._connection, selectors.EVENT_READ)
            for capture in (self._stdout, self._stderr):
                if capture.open:
                    watched.register(capture.fd, selectors.EVENT_READ, capture)
            while not self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.kill()
                    raise TimedOut(seconds)
                for key, _ in watched.select(left):
                    if key.data is None:
                        self._receive()
                    else:
                        key.data.read()
                        if not key.data.open:
                            watched.unregister(key.fd)
        return self._pending.pop(0)

    def _receive(self) -> None:
        try:
            data = self._connection.recv(1 << 20)
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EINTR):  # pragma: no cover - select said readable
                return
            data = b""
        if not data:
            raise WorkerDied(self._death())
        try:
            self._pending.extend(self._buffer.feed(data))
        except BrokenFrame as exc:
            self.kill()
            raise WorkerDied(f"its process sent the grader something that is not an answer ({exc})") from None

    def _death(self) -> str:
        self.alive = False
        status = self._zygote.status(self.pid, wait=5)
        self.kill()
        return describe_exit(status, out_of_memory=self._zygote.oom_kills() > self._oom_kills)

    def output(self) -> tuple[str, str]:
        """What the worker printed since the last call: (stdout, stderr), each cut to a readable size."""
        return self._stdout.take(), self._stderr.take()

    def kill(self) -> None:
        if self.alive:
            self.alive = False
            self._zygote.kill(self.pid)
        self._connection.close()

    def close(self) -> None:
        self.kill()
        for capture in (self._stdout, self._stderr):
            capture.close()
