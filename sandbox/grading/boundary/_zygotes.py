"""The zygote of this grader process, shared by its pytest sessions, and the spare a second grading
lane adopts (`judge._lanes`): which zygote is whose across the fork."""

from __future__ import annotations

import atexit

from ._isolation import Isolation
from ._runner import Zygote

__all__ = ["close_shared_zygote", "forget_shared_zygote", "hand_over_spare_zygote", "reap_spare_zygote",
           "shared_zygote", "spare_zygote"]  # fmt: skip

_SHARED: list[Zygote] = []


def shared_zygote(isolation: Isolation | None = None) -> Zygote:
    """The zygote of this process, started on first use: pytest sessions run in one process (pytester,
    `pytest.main`) share it while they ask for the same isolation, and each sweeps up after itself. It
    ends with the process."""
    isolation = isolation or Isolation(False)
    if _SHARED and (not _SHARED[0].alive or _SHARED[0].isolation != isolation):
        _SHARED.pop().close()
    if not _SHARED:
        _SHARED.append(Zygote(isolation))
        atexit.register(_SHARED[0].close)
    return _SHARED[0]


_SPARE: list[Zygote] = []


def spare_zygote(isolation: Isolation) -> None:
    """Start a second zygote now, for the grader this process will fork (`judge._lanes`' second lane),
    so its start-up overlaps the collection, as the first one's does. Nothing reads it until then."""
    if not _SPARE:
        _SPARE.append(Zygote(isolation, reading=False))
        atexit.register(reap_spare_zygote)


def forget_shared_zygote() -> None:
    """In the forked grader: the inherited zygote is the parent's (its reader thread did not survive the
    fork, and closing it would end the parent's): let go of this copy of its socket. The spare, if it
    was started, becomes this process's zygote; else the next `shared_zygote` starts one."""
    for zygote in _SHARED:
        zygote.let_go()
    _SHARED.clear()
    if _SPARE:
        spare = _SPARE.pop()
        spare.start_reading()
        _SHARED.append(spare)


def hand_over_spare_zygote() -> None:
    """In the grader that forked: the spare is the forked one's now; let go of this copy of its socket."""
    for spare in _SPARE:
        spare.let_go()


def reap_spare_zygote() -> None:
    """Once the forked grader has ended (closing the spare it adopted), or in a run that forked none."""
    while _SPARE:
        spare = _SPARE.pop()
        if spare.let_go_of:
            spare.reap()
        else:  # never handed over: an ordinary close
            spare.start_reading()
            spare.close()


def close_shared_zygote() -> None:
    """End this process's zygote now, for a process that exits without running its atexit handlers."""
    while _SHARED:
        _SHARED.pop().close()
