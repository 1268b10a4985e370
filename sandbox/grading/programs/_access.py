"""Why the user a program runs as cannot start it: a folder on the way it may not enter, a file it may
not read or run.

A grader running as root runs programs as `nobody` (or `--grade-as USER`). Under bubblewrap the
folder of each file the command names is bound at its own path, keeping its mode (the folders above
it are the sandbox's own, open to all); without bubblewrap every folder above it counts too. Either
way a binary built in a 0700 temporary folder cannot be started, and the system only says
"Permission denied". This reads the mode bits of those files and folders (`os.stat`, nothing else),
so the failure can say which folder and what to do. ACLs are not read: a folder they open is not
reported.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path

__all__ = ["unreachable"]


def unreachable(command: Sequence[str], cwd: str | None, uid: int, gid: int, user: str, *, sandboxed: bool) -> str:
    """What stands between user `uid` and the files `command` names, as a sentence; "" when nothing does."""
    here = Path(cwd or os.getcwd())
    for position, word in enumerate(command):
        if position == 0 and os.sep not in word:
            if sandboxed:
                continue  # a runtime found on PATH is the sandbox's own (bound read-only, open to all)
            found = shutil.which(word)
            if found is None:
                continue
            word = found
        path = here / word
        if not os.path.lexists(path):
            continue
        blocked = _blocked(path.resolve(), uid, gid, run=position == 0, sandboxed=sandboxed)
        if blocked:
            return (
                f"The program runs as user {user} (the grader runs as root, so learner code runs unprivileged), "
                f"and {blocked}. Let anyone read it: `chmod a+rX` the program and its folder (or build into a "
                "folder anyone may enter, such as /srv/grading); or run it as a user who can, with --grade-as USER."
            )
    return ""


def _blocked(path: Path, uid: int, gid: int, *, run: bool, sandboxed: bool) -> str:
    for folder in [path.parent] if sandboxed else reversed(path.parents):
        if not _allows(folder, uid, gid, stat.S_IXOTH):
            return f"{_described(folder)} does not let it in, so it cannot reach {path}"
    if not _allows(path, uid, gid, stat.S_IROTH):
        return f"it may not read {_described(path)}"
    if run and path.is_file() and not _allows(path, uid, gid, stat.S_IXOTH):
        return f"it may not run {_described(path)}"
    return ""


def _allows(path: Path, uid: int, gid: int, bit: int) -> bool:
    """Whether the mode bits give `bit` (an `S_I?OTH` bit) to `uid`: its owner's, its group's, or everyone's."""
    try:
        info = path.stat()
    except OSError:
        return True  # nothing to say about a path that cannot be read here either
    if info.st_uid == uid:
        return bool(info.st_mode & (bit << 6))
    if info.st_gid == gid:
        return bool(info.st_mode & (bit << 3))
    return bool(info.st_mode & bit)


def _described(path: Path) -> str:
    info = path.stat()
    try:
        import pwd

        owner = pwd.getpwuid(info.st_uid).pw_name
    except (ImportError, KeyError):
        owner = str(info.st_uid)
    kind = "folder" if path.is_dir() else "file"
    return f"the {kind} {path} (mode {stat.S_IMODE(info.st_mode):04o}, owned by {owner})"
