"""The zygote of this grader process, shared by its pytest sessions, and the spares the other grading
lanes adopt (`judge._lanes`): which zygote is whose across the forks."""

from __future__ import annotations

import atexit

from ._isolation import Isolation
from ._runner import Zygote

__all__ = ["close_shared_zygote", "forget_shared_zygote", "hand_over_spare_zygotes", "reap_spare_zygotes",
           "shared_zygote", "spare_zygote"]  # fmt: skip

_SHARED: list[Zygote] = []


def shared_zygote(isolation: Isolation | None = None) -> Zygote:
    """The zygote of this process, started on first use, for one pytest session: the session's
    `Implementations.close` ends it, so the next session in this process (pytester, `pytest.main`: another
    learner, perhaps) gets a fresh sandbox. One that no learner code ran in yet is kept."""
    isolation = isolation or Isolation(False)
    if _SHARED and (not _SHARED[0].alive or _SHARED[0].isolation != isolation):
        _SHARED.pop().close()
    if not _SHARED:
        _SHARED.append(Zygote(isolation))
        atexit.register(_SHARED[0].close)
    return _SHARED[0]


_SPARE: list[Zygote] = []


def spare_zygote(isolation: Isolation) -> None:
    """Start another zygote now, for a grader this process will fork (a lane of `judge._lanes`), so its
    start-up overlaps the collection, as the first one's does. Nothing reads it until then."""
    _SPARE.append(Zygote(isolation, reading=False))
    if len(_SPARE) == 1:
        atexit.register(reap_spare_zygotes)


def forget_shared_zygote(number: int) -> None:
    """In the `number`-th forked grader: the inherited zygotes are the parent's (their reader threads did
    not survive the fork, and closing one would end it for the parent): let go of this copy of their
    sockets. The `number`-th spare, if it was started, becomes this process's zygote; else the next
    `shared_zygote` starts one."""
    for zygote in _SHARED:
        zygote.let_go()
    _SHARED.clear()
    mine = _SPARE[number - 1] if 0 < number <= len(_SPARE) else None
    for spare in _SPARE:
        if spare is not mine:
            spare.let_go()
    _SPARE.clear()
    if mine is not None:
        mine.start_reading()
        _SHARED.append(mine)


def hand_over_spare_zygotes(count: int) -> None:
    """In the grader that forked: the first `count` spares are the forked ones' now; let go of this
    copy of their sockets."""
    for spare in _SPARE[:count]:
        spare.let_go()


def reap_spare_zygotes() -> None:
    """Once the forked graders have ended (closing the spares they adopted), or in a run that forked
    none, or fewer than it started spares for."""
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
