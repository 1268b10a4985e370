"""Run the program under test once: its own process group, a wall-clock kill, bounded output.

The program is untrusted and may be in any language. It gets a fresh process group (a session), so
at the deadline, and after it exits, everything it started is killed with it: nothing it leaves
behind can reach the next case. Its output is read by two threads that keep the first
`OUTPUT_LIMIT` bytes of each stream and discard the rest, so a program printing forever costs
memory for only that much.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ._cgroups import SandboxCgroup
from ._confine import MEMORY_LIMIT, PROCESS_LIMIT
from ._isolation import INSIDE, Isolation, in_runtime
from ._protocol import ImplementationError
from ._submission import check_regular

__all__ = ["OUTPUT_LIMIT", "ProgramRun", "Relay", "program_refusal", "run_program"]

_LAUNCHER = Path(__file__).with_name("_launch.py")
_GRACE = 10.0
"""Seconds past the deadline before the grader kills the launcher itself (it kills the program at the
deadline, and sweeps within a moment)."""

OUTPUT_LIMIT = 64 * 1024
"""Bytes of stdout and of stderr kept per run."""


@dataclass(frozen=True)
class ProgramRun:
    """What one run of the program did."""

    returncode: int | None
    """The exit status; negative for a signal (as subprocess reports it); None when it could not start."""
    stdout: str
    stderr: str
    timed_out: bool = False
    """Killed at the deadline."""
    seconds: float = 0.0
    not_started: str = ""
    """Why the program could not be started at all (no such file, not executable)."""
    out_of_memory: bool = False
    """The kernel killed a process of its sandbox for going over the sandbox's memory cap (cgroup v2)."""

    @property
    def _ended(self) -> str:
        if self.returncode is None:
            return "did not start"
        if self.returncode < 0:
            try:
                return f"killed by signal {signal.Signals(-self.returncode).name}"
            except ValueError:
                return f"killed by signal {-self.returncode}"
        return f"exit status {self.returncode}"

    @property
    def exit_description(self) -> str:
        """`exit status 1`, `killed by signal SIGSEGV`: as a person reads it, with why when its sandbox
        ran out of memory."""
        if self.out_of_memory:
            return f"{self._ended} after its sandbox ran out of its {MEMORY_LIMIT >> 30} GiB of memory"
        return self._ended


class _Collector:
    """Reads a pipe to its end, keeping the first `limit` bytes."""

    def __init__(self, pipe: IO[bytes], limit: int) -> None:
        self._pipe = pipe
        self._limit = limit
        self._kept = bytearray()
        self.dropped = 0
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            while chunk := self._pipe.read1(65536) if hasattr(self._pipe, "read1") else self._pipe.read(65536):
                room = self._limit - len(self._kept)
                self._kept += chunk[:room]
                self.dropped += max(0, len(chunk) - room)
        except (OSError, ValueError):  # the pipe was closed under us after a kill
            return

    def text(self, wait: float) -> str:
        self._thread.join(wait)
        text = self._kept.decode("utf-8", errors="replace")
        if self.dropped:
            text += f"\n[... {self.dropped} more bytes not kept ...]"
        return text


@dataclass(frozen=True)
class Relay:
    """How a sandboxed program reaches the grader's endpoint: its port, relayed to a Unix socket in
    `folder` (bound into the sandbox)."""

    port: int
    folder: Path
    name: str


def run_program(
    command: Sequence[str],
    env: Mapping[str, str],
    seconds: float,
    *,
    cwd: str | None = None,
    isolation: Isolation | None = None,
    relay: Relay | None = None,
    building: Sequence[str] | None = None,
) -> ProgramRun:
    """Run `command` with `env` and no stdin, through the launcher (`_launch`): killed with everything
    it started after `seconds`, or once it ends. Under bubblewrap (`isolation.sandboxed`, with `relay`)
    it sees only the runtime and the folders of the files its command names.

    `building`: `command` is the build of that program, run in the program's sandbox (without the
    endpoint), with the folders the program's command names writable (its output need not exist yet)
    and a private `/tmp` as its home and caches."""
    isolation = isolation or Isolation(False)
    if os.name != "posix":  # pragma: no cover - Windows: the program alone, in a process group of its own
        return _run(list(command), env, seconds, cwd, [])
    sandbox: contextlib.AbstractContextManager[tuple[list[str], list[int]]]
    who = [str(isolation.uid), str(isolation.gid)] if isolation.uid is not None else ["-", "-"]
    # The process cap: its cgroup's where it has one, else an rlimit of the unprivileged user's.
    who.append(str(PROCESS_LIMIT) if isolation.cgroups is None else "-")
    env = {**env, "PATH": os.pathsep.join(_absolute(env.get("PATH", os.defpath)))}
    status_read, status_write = os.pipe()
    if isolation.sandboxed and (relay is not None or building is not None):
        here = str(Path(cwd or os.getcwd()).resolve())
        try:
            if building is not None:
                ro: list[tuple[str, str]] = []
                _, rw = _bound(building, cwd, made=True)
                if not any(here == inner for _, inner in rw):
                    raise ImplementationError(
                        "The build runs in the program's sandbox, which holds only the program's folder: run "
                        f"`sandbox grade` from the folder the program is in (here: {here})."
                    )
            else:
                command, ro = _bound(command, cwd)
                rw = []
        except ImplementationError as refused:
            os.close(status_read)
            os.close(status_write)
            return ProgramRun(None, "", "", not_started=str(refused))
        inside = f"{INSIDE}/launch.py"
        door = [str(relay.port), f"{INSIDE}/sockets/{relay.name}"] if relay is not None else ["-", "-"]
        launch = [sys.executable, "-I", "-S", inside, str(status_write), f"{seconds:g}", *who, *door]
        sockets = [(str(relay.folder), f"{INSIDE}/sockets")] if relay is not None else []
        sandbox = isolation.bwrap(
            [*launch, "--", *command],
            ro=[(str(_LAUNCHER), inside), *sockets, *ro],
            rw=rw,
            chdir=here if any(here == inner for _, inner in [*ro, *rw]) else "/tmp",
        )
        env = {**(_inside(env) if building is not None else env), "HOME": "/tmp", "TMPDIR": "/tmp"}
        if building is not None:
            env["XDG_CACHE_HOME"] = "/tmp/.cache"
    else:
        launch = [sys.executable, "-I", "-S", str(_LAUNCHER), str(status_write), f"{seconds:g}", *who, "-", "-"]
        sandbox = contextlib.nullcontext(([*launch, "--", *command], []))
    cgroup = None
    try:
        if isolation.cgroups is not None:
            cgroup = SandboxCgroup(isolation.cgroups, memory=MEMORY_LIMIT, processes=PROCESS_LIMIT)
        with sandbox as (argv, fds):
            run = _run(cgroup.command(argv) if cgroup else argv, env, seconds + _GRACE, cwd, [status_write, *fds])
        if cgroup is not None:
            run = dataclasses.replace(run, out_of_memory=cgroup.oom_kills() > 0)
    except OSError as error:
        os.close(status_read)
        return ProgramRun(None, "", "", not_started=f"the sandbox could not be made: {error}")
    finally:
        os.close(status_write)
        if cgroup is not None:
            cgroup.remove()
    with os.fdopen(status_read, "rb") as status:
        said = status.read().decode(errors="replace").strip()
    word, _, rest = said.partition(" ")
    if word == "notstarted":
        return ProgramRun(None, "", "", not_started=rest)
    if word == "exit" and rest.isascii() and rest.isdigit():
        return dataclasses.replace(run, returncode=int(rest))
    if word == "signal" and rest.isascii() and rest.isdigit():
        return dataclasses.replace(run, returncode=-int(rest))
    return dataclasses.replace(run, returncode=-signal.SIGKILL, timed_out=True)


def program_refusal(command: Sequence[str], cwd: str | None) -> str:
    """Why the files `command` names cannot be graded as the submission ("" when they can): a link on
    the way to one of them, or one that is not a regular file or folder; one line saying what to do."""
    try:
        _bound(command, cwd)
    except ImplementationError as refused:
        return str(refused)
    return ""


def _bound(command: Sequence[str], cwd: str | None, *, made: bool = False) -> tuple[list[str], list[tuple[str, str]]]:
    """The command with its paths made absolute, and the folders to bind read-only: the one of each
    file (or folder) the command names. Not the working directory as such: run from a checkout, that
    would show the solutions and everyone's submissions.

    A bare command word (`node`, `python3`) is a runtime found on `PATH`, never a file of the folder
    the program runs in; a file of the runtime is in every sandbox already. Any other file the command
    names is reached without a link, from the folder the grader runs in (or from `/` for an absolute
    path): a link would bind what it points to. `made`: a file a build is to make counts too, by its
    folder. Raises `ImplementationError` for a link, FIFO or device."""
    here = Path(cwd or os.getcwd()).resolve()
    words, folders = [], set()
    for position, word in enumerate(command):
        path = Path(os.path.normpath(here / word))
        bare = position == 0 and os.sep not in word
        there = os.path.lexists(path) or (made and os.path.isdir(path.parent) and not os.path.islink(path.parent))
        if not word or word.startswith("-") or bare or not there or in_runtime(path):
            words.append(word)
            continue
        start = here if path.is_relative_to(here) and not os.path.isabs(word) else Path(path.anchor)
        for step in [path, *path.parents] if os.path.lexists(path) else path.parents:
            if step == start:
                break
            check_regular(step, word if step == path else f"{step} (on the way to {word})")
        folders.add(str(path if path.is_dir() else path.parent))
        words.append(str(path))
    return words, [(folder, folder) for folder in sorted(folders)]


def _inside(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without what names a folder the sandbox does not have (a cache, `GOPATH`): the program would
    find nothing there, or fail to make it."""
    kept = {name: value for name, value in env.items() if not value.startswith(os.sep) or in_runtime(Path(value))}
    return {**kept, "PATH": env["PATH"]}


def _absolute(path: str) -> list[str]:
    """The entries of `PATH` that do not depend on the working directory (the submission's folder)."""
    return [entry for entry in path.split(os.pathsep) if os.path.isabs(entry)]


def _run(argv: list[str], env: Mapping[str, str], seconds: float, cwd: str | None, keep: list[int]) -> ProgramRun:
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=os.name == "posix",
            pass_fds=keep,
        )
    except OSError as error:
        return ProgramRun(None, "", "", not_started=f"{error.strerror or error} ({argv[0]})")
    assert process.stdout is not None and process.stderr is not None
    out = _Collector(process.stdout, OUTPUT_LIMIT)
    err = _Collector(process.stderr, OUTPUT_LIMIT)
    timed_out = not _exited(process, seconds)
    _kill_group(process)
    process.wait()
    elapsed = time.monotonic() - started
    # Output still held open by a grandchild that left the group is not waited for long.
    stdout, stderr = out.text(1.0), err.text(1.0)
    process.stdout.close()
    process.stderr.close()
    return ProgramRun(process.returncode, stdout, stderr, timed_out, elapsed)


def _exited(process: subprocess.Popen[bytes], seconds: float) -> bool:
    """Whether the program ended within `seconds`. On Linux its pidfd says so the moment it does;
    elsewhere `Popen.wait` polls, sleeping up to 50 ms between looks."""
    try:
        pidfd = os.pidfd_open(process.pid)  # type: ignore[attr-defined,unused-ignore]
    except (AttributeError, OSError):
        pidfd = None
    if pidfd is not None:
        try:
            ready, _, _ = select.select([pidfd], [], [], seconds)
        finally:
            os.close(pidfd)
        if not ready:
            return False
    try:
        process.wait(None if pidfd is not None else seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """The program and everything it started in its session; on Windows, the program itself."""
    if os.name == "posix":
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass  # the group is already gone
    elif process.poll() is None:  # pragma: no cover - Windows
        process.kill()
