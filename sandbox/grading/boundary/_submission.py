"""A submission's files, read as data: regular files directly inside the submission's folder, never
followed through a link, never waited on, never read past a bound.

A learner controls what sits in the folder, and the grader may run as root: a symbolic link (to the
solutions, to another learner's file, to a root-only file), a FIFO or a device would hand the grader
something that is not the learner's own file, or hang it, or fill its memory. Each is refused with one
line naming the file and what to do. Touches only the named file and its folder, read-only.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from ._protocol import ImplementationError

__all__ = ["SOURCE_LIMIT", "check_regular", "read_submission"]

SOURCE_LIMIT = 4 << 20
"""Bytes at most in one submitted file: a challenge needs far less."""

_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_WHAT = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFSOCK: "a socket",
}


def read_submission(path: Path, shown_as: str, *, reader: tuple[int, int] | None = None) -> bytes:
    """The bytes of `path`, a regular file directly inside its folder, at most `SOURCE_LIMIT` of them.

    `reader` is the (uid, gid) of the user learner code runs as, when the grader is root: a file that
    user may not read is refused too. Raises `ImplementationError` saying what to do."""
    try:
        folder = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise _unreadable(shown_as, error) from None
    try:
        before = _lstat(path, folder, shown_as)
        _check(before, shown_as, reader)
        try:
            descriptor = os.open(path.name, _FLAGS, dir_fd=folder)
        except OSError as error:
            raise _unreadable(shown_as, error) from None
    finally:
        os.close(folder)
    with os.fdopen(descriptor, "rb") as file:
        opened = os.fstat(descriptor)
        if (opened.st_dev, opened.st_ino) != (before.st_dev, before.st_ino):
            raise ImplementationError(f"{shown_as} changed while it was being read: grade it again.")
        _check(opened, shown_as, reader)
        data = file.read(SOURCE_LIMIT + 1)
    if len(data) > SOURCE_LIMIT:
        raise _oversized(shown_as)
    return data


def check_regular(path: Path, shown_as: str) -> None:
    """Refuse `path` unless it is a regular file (or a folder) itself, not a link, FIFO or device.
    Raises `ImplementationError` saying what to do."""
    try:
        info = os.lstat(path)
    except OSError as error:
        raise _unreadable(shown_as, error) from None
    if not stat.S_ISDIR(info.st_mode):
        _check(info, shown_as, None, limit=False)


def _lstat(path: Path, folder: int, shown_as: str) -> os.stat_result:
    try:
        return os.lstat(path.name, dir_fd=folder) if os.lstat in os.supports_dir_fd else os.lstat(path)
    except OSError as error:
        raise _unreadable(shown_as, error) from None


def _check(info: os.stat_result, shown_as: str, reader: tuple[int, int] | None, *, limit: bool = True) -> None:
    kind = stat.S_IFMT(info.st_mode)
    if kind == stat.S_IFDIR:
        raise ImplementationError(f"{shown_as} is a folder, not a file: put the file itself there.")
    if kind != stat.S_IFREG:
        raise ImplementationError(
            f"{shown_as} is {_WHAT.get(kind, 'not a regular file')}: the grader reads only regular files directly "
            f"inside the submission's folder, never through a link. Put the file itself there (`cp -L`)."
        )
    if limit and info.st_size > SOURCE_LIMIT:
        raise _oversized(shown_as)
    if reader is not None and not _readable(info, *reader):
        raise ImplementationError(
            f"{shown_as} may not be read by the user learner code runs as (mode {stat.S_IMODE(info.st_mode):04o}): "
            "the grader reads a submission with the learner's rights. Let anyone read it: `chmod a+r` it."
        )


def _readable(info: os.stat_result, uid: int, gid: int) -> bool:
    if info.st_uid == uid:
        return bool(info.st_mode & stat.S_IRUSR)
    if info.st_gid == gid:
        return bool(info.st_mode & stat.S_IRGRP)
    return bool(info.st_mode & stat.S_IROTH)


def _oversized(shown_as: str) -> ImplementationError:
    return ImplementationError(f"{shown_as} is over {SOURCE_LIMIT // 1024} KiB: a challenge needs far less.")


def _unreadable(shown_as: str, error: OSError) -> ImplementationError:
    if error.errno in (errno.ENOENT, errno.ENOTDIR):
        return ImplementationError(f"{shown_as} does not exist.")
    if error.errno == errno.ELOOP:  # O_NOFOLLOW met a link put there after the check
        return ImplementationError(f"{shown_as} is a symbolic link: put the file itself there (`cp -L`).")
    return ImplementationError(f"{shown_as} could not be read: {error.strerror or error}.")
