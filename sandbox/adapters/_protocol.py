"""`sandbox serve`'s HTTP/1.1 protocol: uvicorn's own (httptools), with three bounds a server that a
room of laptops shares needs, and that uvicorn leaves to a proxy in front of it, and one socket setting.

- A connection that sends nothing is closed after `timeout_keep_alive` seconds, as one idle after an
  answer is (uvicorn arms that timer only after an answer: Kludex/uvicorn#1192).
- A request head must be whole within `timeout_keep_alive` seconds of its first byte, and at most
  `MAX_HEAD` bytes (else a 400 that says so): uvicorn's keep-alive timer stops at the first byte,
  and it keeps a head of any size in memory.
- At `limit_concurrency` open connections, idle ones (no request in flight, nothing left to write)
  are closed to make room, where uvicorn would answer newcomers 503: each holds a file descriptor,
  and a server out of them resets every newcomer. The limit is set below the open-file limit
  (`sandbox.adapters._serve`).
- A read that leaves a request unfinished is acknowledged at once (`_tcp.quick_ack`): a client that
  writes a head and its body in two segments would otherwise wait about 40 ms a kept-alive request.

May touch: the connection's transport, and the server's set of connections (to close idle ones).
"""

from __future__ import annotations

import asyncio
import logging

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ._tcp import quick_ack

__all__ = ["MAX_HEAD", "Protocol"]

MAX_HEAD = 64 * 1024
log = logging.getLogger("sandbox.serve")


class _HeadTooLarge(Exception):
    """Raised in a parser callback: httptools stops, and uvicorn answers 400 (`send_400_response`)."""


class Protocol(HttpToolsProtocol):
    """One client's connection (see the module's docstring for what it adds to uvicorn's)."""

    _head_bytes = 0
    _head_timer: asyncio.TimerHandle | None = None
    _refusal = ""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self.timeout_keep_alive_handler)
        if self.limit_concurrency is not None and len(self.connections) >= self.limit_concurrency:
            self._make_room(self.limit_concurrency)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        cycle = self.cycle
        if self._head_timer is not None or (cycle is not None and cycle.more_body and not cycle.response_complete):
            quick_ack(self.transport.get_extra_info("socket"))

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_bytes = 0
        self._head_timer = self.loop.call_later(self.timeout_keep_alive, self._head_too_slow)

    def on_url(self, url: bytes) -> None:
        self._grow(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._grow(len(name) + len(value))
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        super().send_400_response(self._refusal or msg)

    def _grow(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > MAX_HEAD:
            self._refusal = f"The request head is over {MAX_HEAD} bytes: send a smaller one."
            raise _HeadTooLarge

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def _idle(self) -> bool:
        transport = self.transport
        busy = self.cycle is not None and not self.cycle.response_complete
        return not busy and not transport.is_closing() and not transport.get_write_buffer_size()

    def _make_room(self, cap: int) -> None:
        """Close a batch of idle connections (a sixteenth of the cap), the newest one spared."""
        victims = [c for c in self.connections if c is not self and isinstance(c, Protocol) and c._idle()]
        victims = victims[: max(1, cap // 16)]
        for victim in victims:
            victim.transport.close()
        log.warning(
            "%d connections open, the most this server holds (`ulimit -n` allows more): closed %d idle ones "
            "to make room",
            len(self.connections),
            len(victims),
        )
