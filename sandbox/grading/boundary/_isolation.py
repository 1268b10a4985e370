"""Where learner code runs: inside bubblewrap when it is usable, else in plain processes; as whom.

Under bubblewrap (`bwrap`, the engine behind Flatpak) the learner's processes get a file system of
their own, read-only, holding only what grading needs (the Python runtime and its site-packages, the
installed `sandbox` package, a socket to the grader's endpoint, a private `/tmp`), a pid namespace of
their own (the grader, the report's writer, other submissions' processes are not there to signal or
trace), no network (a namespace whose only way out is the endpoint's socket), a user namespace of
their own and a seccomp filter (`_confine`), and they die with the grader. When the grader runs as
root they also run as an unprivileged user (`nobody`, or `--grade-as USER`), under bubblewrap and in
the fallback alike. Each sandbox gets a cgroup of its own capping its memory and processes where
the machine allows (`_cgroups`), and each worker and each program takes the other caps (and, without
cgroup v2, those too) as resource limits (`_confine`).

`--isolation strict` refuses to grade without bubblewrap and its filter, `process` never uses it,
`auto` (the default) uses it when this machine allows.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ._cgroups import cgroup_base
from ._confine import caps_notice, seccomp_filter, user_namespace
from ._output import CPU_LIMIT

__all__ = ["INSIDE", "MODES", "Isolation", "IsolationError", "choose", "collector_hidden", "in_runtime"]

INSIDE = "/run/sandbox-grading"
"""Where the grader's own files appear in a sandbox: the package (`INSIDE/sandbox`), the endpoint's
sockets (`INSIDE/sockets`)."""
MODES = ("auto", "strict", "process")
_NOBODY = 65534
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC = (
    "/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
    "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/ssl", "/etc/ca-certificates", "/etc/mime.types",
)  # fmt: skip
"""What programs read from /etc to start; nothing else of the machine's configuration."""


class IsolationError(Exception):
    """Grading cannot run with the isolation asked for; the message says what to do."""


@dataclass(frozen=True)
class Isolation:
    """How this run isolates learner code."""

    sandboxed: bool
    """Under bubblewrap."""
    uid: int | None = None
    """The user learner code runs as, when the grader is root (None: the grader's own)."""
    gid: int | None = None
    user: str = ""
    why: str = ""
    """Why bubblewrap is not used, when it is not."""
    unfiltered: str = ""
    """Why no seccomp filter applies under bubblewrap ("" when one does)."""
    cgroups: Path | None = None
    """Where each sandbox's own cgroup is made, capping its memory and processes (`_cgroups`); None:
    rlimits cap learner code instead."""
    rlimits_why: str = ""
    """Why rlimits, not cgroup v2, cap learner code here (when `choose` looked)."""
    binds: tuple[str, ...] = field(default=(), compare=False)

    def notice(self) -> str:
        """The one line a run starts with: where learner code runs, as whom, under which caps."""
        who = f", as user {self.user}" if self.user else ""
        alone = self.sandboxed or self.uid is not None
        caps = caps_notice(CPU_LIMIT, processes=alone, cgroups=self.cgroups is not None, why=self.rlimits_why)
        if self.sandboxed:
            walls = "read-only files, own pids, users and network, seccomp filter"
            if self.unfiltered:
                walls = f"read-only files, own pids, users and network, no seccomp filter: {self.unfiltered}"
            return f"sandbox: learner code runs under bubblewrap ({walls}){who}; {caps}."
        return (
            f"sandbox: learner code runs in plain processes{who}, not in bubblewrap ({self.why}); "
            f"{caps}; see the README's instructor's guide for what that cannot stop."
        )

    @contextlib.contextmanager
    def bwrap(
        self,
        command: Sequence[str],
        *,
        ro: Iterable[tuple[str, str]] = (),
        rw: Iterable[tuple[str, str]] = (),
        chdir: str = "/tmp",
    ) -> Iterator[tuple[list[str], list[int]]]:
        """`command` inside a fresh sandbox: `ro` and `rw` are (path outside, path inside) pairs. Yields
        the argv and the descriptors to pass to it (its user namespace, its filter), open until the
        block ends: start the process inside the block. Raises `OSError` when the namespace cannot be made."""
        binds = [*((src, dst, "--ro-bind") for src, dst in _runtime()), *((s, d, "--ro-bind") for s, d in ro)]
        binds += [(src, dst, "--bind") for src, dst in rw]
        argv = [_bwrap() or "bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net"]
        argv += ["--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--as-pid-1"]
        # The private /tmp first, so that a bind below it (a submission in a temporary folder) shows.
        mounts = ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp"]
        for directory in _ancestors(dst for _, dst, _ in binds):
            mounts += ["--perms", "0755", "--dir", directory]
        for src, dst, how in binds:
            if how == "--ro-bind" and src == dst and os.path.islink(src) and src.count("/") == 1:
                mounts += ["--symlink", os.readlink(src), dst]  # /lib -> usr/lib on a merged /usr
            else:
                mounts += [how, src, dst]
        fds: list[int] = []
        with contextlib.ExitStack() as opened:
            if os.geteuid() != 0:
                argv += ["--unshare-user"]
            else:  # see `_confine`: bubblewrap's own --unshare-user would map the sandbox to root
                namespace = user_namespace(self.uid or _NOBODY, self.gid or _NOBODY)
                opened.callback(os.close, namespace)
                fds.append(namespace)
                argv += ["--userns", str(namespace), "--uid", "0", "--gid", "0"]
            rules = seccomp_filter()
            if isinstance(rules, bytes):
                read, write = os.pipe()
                opened.callback(os.close, read)
                with os.fdopen(write, "wb") as pipe:  # a filter of a few hundred bytes: the pipe holds it
                    pipe.write(rules)
                fds.append(read)
                argv += ["--seccomp", str(read)]
            yield [*argv, *mounts, "--chdir", chdir, "--", *command], fds


def choose(mode: str, grade_as: str | None = None) -> Isolation:
    """The isolation for `--isolation mode` (and `--grade-as`). Raises `IsolationError`."""
    if mode not in MODES:
        raise IsolationError(f"--isolation {mode}: use one of {', '.join(MODES)}.")
    uid = gid = None
    user = ""
    if grade_as is not None and os.geteuid() != 0:
        raise IsolationError(
            f"--grade-as {grade_as}: only a grader running as root changes user; learner code already runs "
            "as you. Leave the option out."
        )
    if os.geteuid() == 0:
        user = grade_as or "nobody"
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            raise IsolationError(
                f"--grade-as {user}: no such user here. The grader runs as root, and learner code must not: "
                "name an unprivileged user (`nobody` is the default)."
            ) from None
        if entry.pw_uid == 0:
            raise IsolationError(f"--grade-as {user}: that is root. Name an unprivileged user.")
        uid, gid = entry.pw_uid, entry.pw_gid
    base = cgroup_base()
    cgroups, rlimits_why = (base, "") if isinstance(base, Path) else (None, base)
    if mode == "process":
        return Isolation(False, uid, gid, user, why="--isolation process", cgroups=cgroups, rlimits_why=rlimits_why)
    problem = _unusable()
    if problem and mode == "strict":
        raise IsolationError(
            f"--isolation strict: bubblewrap is not usable here ({problem}). Install it (Debian and Ubuntu: "
            "`apt-get install bubblewrap`) where user namespaces are allowed, or grade with --isolation auto."
        )
    rules = seccomp_filter()
    unfiltered = rules if isinstance(rules, str) and not problem else ""
    if unfiltered and mode == "strict":
        raise IsolationError(
            f"--isolation strict: no seccomp filter can be built here: {unfiltered}. Install it, or grade with "
            "--isolation auto."
        )
    return Isolation(
        not problem, uid, gid, user, why=problem, unfiltered=unfiltered, cgroups=cgroups, rlimits_why=rlimits_why
    )


_STAND_IN = '''"""skyl's stream collector is off limits in this challenge: the grader's sandbox holds this file
in its place."""


class StreamCollector:
    def __init__(self, *args, **kwargs):
        from sandbox.grading.learner._worker import _OffLimitsCollector

        _OffLimitsCollector()


def collect_stream(stream):
    StreamCollector()


async def acollect_stream(stream):
    StreamCollector()
'''


def collector_hidden(package: Path, folder: Path) -> list[tuple[str, str]]:
    """Read-only binds that take skyl's stream collector out of a sandbox's view of `package` (at
    `INSIDE/sandbox`, and at its own path when the runtime holds it), for the challenges that forbid it:
    a stand-in that raises in place of `skyl/_collect.py`, and an empty file over each compiled copy of
    it. Reloading the module, importing it by path or reading the file (or its bytecode) then finds the
    stand-in. Writes both to `folder`."""
    stand_in, empty = folder / "_collect.py", folder / "empty"
    stand_in.write_text(_STAND_IN, encoding="utf-8")
    empty.write_bytes(b"")
    for made in (stand_in, empty):
        made.chmod(0o644)
    compiled = sorted(path.name for path in (package / "skyl" / "__pycache__").glob("_collect.*.pyc"))
    binds = []
    for inside in [f"{INSIDE}/sandbox", *([str(package)] if in_runtime(package) else [])]:
        binds.append((str(stand_in), f"{inside}/skyl/_collect.py"))
        binds += [(str(empty), f"{inside}/skyl/__pycache__/{name}") for name in compiled]
    return binds


def in_runtime(path: Path) -> bool:
    """Whether `path` is part of the runtime every sandbox sees (the system, Python), not a submission."""
    return any(path.is_relative_to(outer) for outer, _ in _runtime())


def _bwrap() -> str | None:
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=1)
def _unusable() -> str:
    """Why bubblewrap cannot sandbox here ("" when it can), found by starting it once."""
    if not sys.platform.startswith("linux"):
        return f"bubblewrap is Linux only, this is {sys.platform}"
    found = _bwrap()
    if found is None:
        return "`bwrap` is not installed"
    try:
        with Isolation(True).bwrap([sys.executable, "-I", "-S", "-c", "pass"]) as (probe, fds):
            done = subprocess.run(probe, pass_fds=fds, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"`bwrap` did not run: {error}"
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return f"`bwrap` refused: {said[-1] if said else f'exit status {done.returncode}'}"
    return ""


@functools.lru_cache(maxsize=1)
def _runtime() -> tuple[tuple[str, str], ...]:
    """What Python (and a program's own runtime) needs, read-only at the same paths: the system's
    directories, the interpreter's prefix, and site-packages, but never a folder on `sys.path` that is
    a checkout (an editable install's source tree holds `solutions/`)."""
    paths = [path for path in _SYSTEM + _ETC if os.path.lexists(path)]
    prefixes = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), Path(sys.exec_prefix).resolve()}
    paths += sorted(str(prefix) for prefix in prefixes)
    for entry in sys.path:
        resolved = Path(entry or ".").resolve()
        if resolved.is_dir() and resolved.name in ("site-packages", "dist-packages"):
            paths.append(str(resolved))
    kept: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(path == outer or path.startswith(outer.rstrip("/") + "/") for outer in kept):
            kept.append(path)
    return tuple((path, path) for path in kept)


def _ancestors(paths: Iterable[str]) -> list[str]:
    """Every directory above the mount points, made traversable (bubblewrap makes them 0700)."""
    found: set[str] = set()
    for path in paths:
        parent = Path(path).parent
        while str(parent) != "/":
            found.add(str(parent))
            parent = parent.parent
    found -= {"/tmp", "/proc", "/dev"}
    return sorted(found, key=lambda path: (path.count("/"), path))
