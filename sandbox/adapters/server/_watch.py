"""When a connection gives up on its client: the deadlines a sweep enforces, the watch on an answer
that stops leaving (the write timeout), and the lingering close after a refused body.

May touch: the connection's transport (to close, abort or end it) and its deadline fields; nothing of
the request or the engine. A mixin of `Connection`, kept apart so that what decides to give up is
read in one place.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._request import NEVER, Limits, Request

if TYPE_CHECKING:
    from ._pool import Pool

__all__ = ["Watch"]

log = logging.getLogger("sandbox.serve")


class Watch:
    """The deadlines of one connection (see `Connection`, which sets them as its requests go)."""

    transport: asyncio.Transport | None
    limits: Limits
    connections: Pool
    peer: str
    queue: deque[Request]
    busy: Request | None
    current: Request | None
    lingering: bool
    last: tuple[str, str, int]
    unsent_seen: int
    _in_head: bool
    _deadline: float
    _then: Callable[[], Any]
    _write_check: float
    _now: Callable[[], float]
    unflushed: bytes | None

    def _linger(self) -> None:
        """After a 413 or 408: say so, end our side, and drop what the client still sends for a while."""
        transport = self.transport
        assert transport is not None
        self.lingering = True
        if transport.can_write_eof():
            transport.write_eof()
        transport.resume_reading()
        self._watch_writes()
        self._set(self.limits.linger, transport.abort)

    def _cut_silent(self) -> None:
        """No request head in time (or an idle kept-alive connection): close, unless an answer is
        still leaving (the write watch judges that one)."""
        transport = self.transport
        if transport is None or transport.is_closing() or self.busy is not None:
            return
        if transport.get_write_buffer_size() or self.unflushed is not None:
            self._set(self.limits.keep_alive, self._cut_silent)
            return
        transport.close()

    def _watch_writes(self) -> None:
        """Drop the connection if what is buffered for it stops leaving for `write_timeout` seconds."""
        transport = self.transport
        if transport is None or self._write_check != NEVER or not transport.get_write_buffer_size():
            return
        self.unsent_seen = transport.get_write_buffer_size()
        self._write_check = self._now() + self.limits.write_timeout

    def _check_writes(self) -> None:
        transport = self.transport
        if transport is None:
            return
        unsent = transport.get_write_buffer_size()
        if not unsent:
            return
        if unsent < self.unsent_seen:  # still leaving, however slowly
            self.unsent_seen = unsent
            self._write_check = self._now() + self.limits.write_timeout
            return
        log.warning(
            "dropped an answer the client did not read for %g s: %s to %s, %d bytes unsent",
            self.limits.write_timeout,
            self.last_answer,
            self.peer,
            unsent,
        )
        transport.abort()
        self.connections.freed = True

    @property
    def last_answer(self) -> str:
        method, path, status = self.last
        return f"{method} {path} ({status})"

    def state(self) -> str:
        """What this connection is doing, for the shutdown log."""
        unsent = self.pending_bytes()
        if unsent:
            return f"{self.last_answer} to {self.peer}: {unsent} bytes not yet read"
        if self.busy is not None:
            return f"{self.busy.method} {self.busy.path} from {self.peer}: still being answered"
        if self.current is not None:
            return f"{self.current.method} {self.current.path} from {self.peer}: its body had not all arrived"
        return f"{self.peer}: a request head had not all arrived"

    def pending_bytes(self) -> int:
        """Bytes of answers written but not yet taken by the client's socket."""
        transport = self.transport
        held = len(self.unflushed) if self.unflushed is not None else 0
        try:
            return held + (transport.get_write_buffer_size() if transport is not None else 0)
        except RuntimeError:  # pragma: no cover - uvloop, after the transport closed
            return held

    def idle(self) -> bool:
        """Nothing in flight: no request begun, none being answered, nothing left to write."""
        return (
            self.busy is None
            and self.current is None
            and not self.queue
            and not self.pending_bytes()
            and not self._in_head
        )

    def _set(self, seconds: float, then: Callable[[], Any]) -> None:
        """The next deadline: `then` runs at the first sweep after `seconds` (see `Pool.sweep`)."""
        self._deadline = self._now() + seconds
        self._then = then

    def tick(self, now: float) -> None:
        """Run what is due: a deadline passed, or a check of an answer still leaving."""
        if now >= self._deadline:
            self._deadline = NEVER
            self._then()
        if now >= self._write_check:
            self._write_check = NEVER
            self._check_writes()
