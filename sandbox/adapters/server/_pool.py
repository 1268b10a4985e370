"""The server's open connections, capped by the open-file limit, and the sweep that runs their deadlines."""

from __future__ import annotations

import asyncio
import ctypes
import functools
import logging
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._connection import Connection

__all__ = ["HOLD", "MAPPED_ABOVE", "Pool", "keep_big_blocks_mapped"]

log = logging.getLogger("sandbox.serve")


class Pool:
    """The server's open connections, at most `cap` of them. Each holds a file descriptor, and past
    the open-file limit `accept()` fails: newcomers would be turned away while a flood of idle or
    slow connections holds every descriptor. So at the cap the oldest connections with nothing in
    flight (no answer being made or sent) are closed, a batch at a time, to make room."""

    def __init__(self, cap: int, loop: asyncio.AbstractEventLoop) -> None:
        self.cap = cap
        self.loop = loop
        self.open: dict[Connection, None] = {}  # oldest first
        self.freed = False
        """An unread answer was dropped since the last sweep: give its memory back to the system."""
        self.deferred: list[Connection] = []
        self.waiting: list[Connection] = []
        """Connections with whole requests in line, to answer at the loop's next step (see `ready`)."""
        self._stepping = False
        self._since = 0.0

    def ready(self, connection: Connection) -> None:
        """Answer `connection`'s requests on the loop's next step, after every connection ready at
        this one has been read and parsed: with many clients, parsing them all and then answering
        them one after the other costs less CPU than answering each read at once (about 10 % a
        request at 16 clients, in alternating runs), likely as each kind of work finds its code
        still cached. One step answers them all and then writes every answer (`defer`), so one
        client alone waits one step of the loop, not one for its answer and one for its write."""
        if not self.waiting:
            self.loop.call_soon(self._step)
        self.waiting.append(connection)

    def _step(self) -> None:
        waiting, self.waiting = self.waiting, []
        self._stepping = True
        try:
            for connection in waiting:
                connection.answer_queued()
        finally:
            self._stepping = False
            self.flush()

    def defer(self, connection: Connection) -> None:
        """Hold `connection`'s answer until the other connections ready at this step of the loop are
        answered too (at most `HOLD` seconds of their work), then write them all. With many clients
        this costs less CPU a request (9-18 % at 16 and 64 clients, in alternating runs): the
        write path is run many times in a row, and a sleeping client is woken once for several
        answers rather than once for each. An answer made outside a step (by a task, a worker
        thread) is written at the loop's next step."""
        if not self.deferred:
            self._since = time.perf_counter()
            if not self._stepping:
                self.loop.call_soon(self.flush)
        self.deferred.append(connection)
        if time.perf_counter() - self._since > HOLD:
            self.flush()

    def flush(self) -> None:
        deferred, self.deferred = self.deferred, []
        for connection in deferred:
            connection.flush()

    def __len__(self) -> int:
        return len(self.open)

    def __iter__(self) -> Iterator[Connection]:
        return iter(list(self.open))

    def add(self, connection: Connection) -> None:
        self.open[connection] = None
        if len(self.open) > self.cap:
            self._shed(max(1, self.cap // 16))

    def discard(self, connection: Connection) -> None:
        self.open.pop(connection, None)

    def _shed(self, count: int) -> None:
        victims = [c for c in self.open if c.busy is None and not c.pending_bytes() and not c.queue][:count]
        for victim in victims:
            self.open.pop(victim, None)
            if victim.transport is not None:
                victim.transport.abort()
        log.warning(
            "%d connections open, the most this server's open-file limit allows: closed the %d oldest "
            "idle or slow ones to make room (raise `ulimit -n` to hold more)",
            self.cap,
            len(victims),
        )

    def sweep(self, now: float) -> None:
        """Run every connection's due deadlines (one timer for the server, none per request)."""
        for connection in list(self.open):
            connection.tick(now)
        if self.freed:
            self.freed = False
            _trim_heap()


HOLD = 0.002
"""At most this long an answer waits for the answers of the other connections ready with it."""

MAPPED_ABOVE = 1024 * 1024
"""Blocks of at least this many bytes get pages of their own from the system (`keep_big_blocks_mapped`)."""


def keep_big_blocks_mapped() -> None:
    """Have glibc give every block of a megabyte or more its own mapping, returned to the system the
    moment it is freed. By default glibc raises that threshold to the size of the last big block freed
    (up to 32 MiB), after which a stalled reader's 20 MB answer is made on the heap, and its pages
    stay in the process after the answer is dropped, where `malloc_trim` does not reach them all
    (measured: 10 dropped answers left RSS at 2x the baseline; with this, within 1.2x). An answer is
    small, a bulk one is rare: the mappings cost nothing that matters. Elsewhere than glibc, nothing."""
    mallopt = _libc_function("mallopt")
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, MAPPED_ABOVE)


_M_MMAP_THRESHOLD = -3  # glibc's malloc.h


def _trim_heap() -> None:
    """Return freed memory to the system. A dropped answer's megabytes were made in a worker
    thread's malloc arena, which glibc does not shrink by itself: without this, the process keeps
    them (unused) after the client is gone. Elsewhere than glibc, nothing to do."""
    trim = _libc_function("malloc_trim")
    if trim is not None:
        trim(0)


@functools.cache
def _libc_function(name: str) -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):  # pragma: no cover
        return None
    try:
        function: Callable[..., int] = getattr(ctypes.CDLL("libc.so.6"), name)
    except (OSError, AttributeError):  # pragma: no cover - musl and others have no malloc_trim or mallopt
        return None
    return function
