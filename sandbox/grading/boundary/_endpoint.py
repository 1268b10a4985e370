"""The grader's sandbox on a private loopback port, for learner code running in another process.

Each grading conversation opens a door with a secret token of its own: `http://127.0.0.1:PORT/TOKEN`
is the base URL its client gets. Under it, the providers' real paths reach the conversation's engine
(whose journal the grader judges), and `POST TOKEN/tools/run` runs one tool call, so the grader sees
every execution (its order, its overlap with others) and decides its output or failure. A request
with an unknown or closed token gets a 404 and touches nothing.

HTTP/1.1 parsed by h11, over asyncio in one thread; any language's HTTP client can speak it. What
sandboxed code sends is hostile, so the endpoint holds a bounded amount of it, whatever it does:

- at most `MAX_CONNECTIONS` open connections: a newcomer beyond them closes the one idle longest
  (no request under way), or is closed itself when none is idle;
- a request head of at most `MAX_HEAD` bytes; its door (the token) is found before any of its body
  is read, and an unknown door is answered 404 and the connection closed;
- a body of at most `max_body` bytes (413), and at most `BODY_BUDGET` bytes of bodies held at once
  over every connection (503, then closed);
- a connection idle for `IDLE_SECONDS` is closed, as is one whose request is not whole within
  `REQUEST_SECONDS` of its first byte, or that leaves an answer unread for `WRITE_SECONDS`.

Each connection reads `_READ` bytes at a time and buffers at most about that much beyond what it
has parsed, so sandboxed code makes the endpoint hold at most about `MEMORY_BOUND` bytes.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Awaitable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import h11

from ...adapters._tcp import quick_ack, tcp_socket
from ...engine._engine import DEFAULT_MAX_BODY, Exchange
from ...engine.faults import Delivery, arrived_at

__all__ = [
    "BODY_BUDGET",
    "MAX_CONNECTIONS",
    "MAX_HEAD",
    "MEMORY_BOUND",
    "TOOLS_PATH",
    "Door",
    "Endpoint",
]

TOOLS_PATH = "/tools/run"
MAX_CONNECTIONS = 128
MAX_HEAD = 16 * 1024
BODY_BUDGET = 32 * 1024 * 1024
IDLE_SECONDS = 30.0
REQUEST_SECONDS = 10.0
WRITE_SECONDS = 30.0
_READ = 64 * 1024
MEMORY_BOUND = BODY_BUDGET + MAX_CONNECTIONS * (MAX_HEAD + 6 * _READ)
"""Bytes of what sandboxed code sent that the endpoint may hold at once: bodies, heads, and each
connection's read buffers (asyncio's and the stream's)."""
_REASONS = {
    200: "OK", 400: "Bad Request", 404: "Not Found", 413: "Payload Too Large", 500: "Internal Server Error",
    503: "Service Unavailable",
}  # fmt: skip


class Door(Protocol):
    """What one conversation serves: model requests, and tool runs."""

    def model(
        self, method: str, path: str, body: bytes, query: str
    ) -> tuple[int, Mapping[str, str], bytes] | Exchange: ...

    def tool(self, payload: Any) -> Awaitable[Mapping[str, Any]]: ...


@dataclass(frozen=True)
class _Reply:
    status: int
    headers: Mapping[str, str]
    chunks: tuple[bytes, ...]
    delivery: Delivery | None = None
    """A scripted fault's latency or cut connection (`sandbox.engine.faults`)."""

    def response(self) -> h11.Response:
        headers = [(name, value) for name, value in self.headers.items() if name.lower() != "content-length"]
        headers.append(("content-length", str(sum(len(chunk) for chunk in self.chunks))))
        return h11.Response(status_code=self.status, headers=headers, reason=_REASONS.get(self.status, "Error"))


def _json(status: int, data: Any) -> _Reply:
    return _Reply(status, {"content-type": "application/json"}, (json.dumps(data).encode(),))


def _refusal(status: int, message: str) -> _Reply:
    return _json(status, {"error": {"message": f"sandbox: {message}"}})


_BUSY = _refusal(503, "too many requests in flight at once; retry after a moment")


class _Closed(Exception):
    """The connection ended, or must end now."""


class _Peer:
    """One connection: its parser, its timer, whether it is idle, and the body bytes it holds."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.parser = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self.idle_since: float | None = time.monotonic()
        self.held = 0
        self._timer: asyncio.TimerHandle | None = None

    def arm(self, seconds: float | None) -> None:
        """Drop the connection unless it is disarmed (or armed again) within `seconds`; None: disarm."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None if seconds is None else asyncio.get_running_loop().call_later(seconds, self.drop)

    def drop(self) -> None:
        self.writer.transport.abort()

    def close(self) -> None:
        """Close once what is written has left; drop it if the peer does not read it in time."""
        transport = self.writer.transport
        if transport.get_write_buffer_size():
            asyncio.get_running_loop().call_later(WRITE_SECONDS, transport.abort)
        transport.close()

    async def event(self) -> Any:
        """The parser's next event, reading as it needs. Raises `_Closed`."""
        while True:
            try:
                event = self.parser.next_event()
            except h11.RemoteProtocolError:
                raise _Closed from None
            if event is not h11.NEED_DATA:
                return event
            try:
                data = await self.reader.read(_READ)
            except ConnectionError:
                raise _Closed from None
            if self.idle_since is not None:  # a request's first byte: it has this long to arrive whole
                self.idle_since = None
                self.arm(REQUEST_SECONDS)
            self.parser.receive_data(data)  # b"": the peer closed its side

    async def send(self, *events: Any) -> None:
        """Write `events` in one piece (a reply split in several reaches a relayed client as several
        segments, which its TCP may hold back), then wait up to `WRITE_SECONDS` until the peer took enough."""
        self.writer.write(b"".join(self.parser.send(event) or b"" for event in events))
        self.arm(WRITE_SECONDS)
        await self.writer.drain()
        self.arm(None)

    async def deliver(self, reply: _Reply) -> bool:
        """Write `reply`, with its fault's latency and cut; False: the connection was cut and must close."""
        delivery = reply.delivery or Delivery()
        if delivery.first_byte:
            await asyncio.sleep(delivery.first_byte)
        if delivery.cut_after == 0:
            return False
        chunks = reply.chunks[: delivery.cut_after]  # what was written leaves before the connection closes
        end = () if delivery.cut_after is not None else (h11.EndOfMessage(),)  # a cut, even past the last chunk
        if delivery.between:
            await self.send(reply.response())
            for index, chunk in enumerate(chunks):
                if index:
                    await asyncio.sleep(delivery.between)
                await self.send(h11.Data(data=chunk))
            await self.send(*end)
        else:
            await self.send(reply.response(), *(h11.Data(data=chunk) for chunk in chunks), *end)
        return bool(end)


class Endpoint:
    """The loopback server: started once, doors opened and closed per conversation."""

    def __init__(self, max_body: int = DEFAULT_MAX_BODY, *, unix: tuple[Path, str] | None = None) -> None:
        """`unix`: also serve on a Unix socket at this path, which sandboxed workers (no network of their
        own) reach under the second name (`worker_socket`)."""
        self._doors: dict[str, Door] = {}
        self._max_body = max_body
        self._socket = tcp_socket()  # sends at once; and each read is acknowledged at once (`quick_ack`)
        self._socket.bind(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        self._unix: socket.socket | None = None
        self.worker_socket: str | None = None
        if unix is not None:
            self._unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._unix.bind(str(unix[0]))
            os.chmod(unix[0], 0o666)  # for the unprivileged user learner code runs as
            self._unix.listen(128)
            self.worker_socket = unix[1]
        self._loop = asyncio.new_event_loop()
        self._peers: set[_Peer] = set()
        self._held = 0
        self._started: Future[asyncio.AbstractServer] = Future()
        self._servers: list[asyncio.AbstractServer] = []
        self._thread = threading.Thread(target=self._serve, name="sandbox-grading-endpoint", daemon=True)
        self._thread.start()
        self._server = self._started.result(timeout=30)

    def open(self, door: Door) -> str:
        """Serve `door` under a fresh secret token; returns its base URL."""
        token = secrets.token_urlsafe(18)
        self._doors[token] = door
        return f"http://127.0.0.1:{self.port}/{token}"

    def close_door(self, base: str) -> None:
        """Requests under `base` get 404 from now on."""
        self._doors.pop(base.rsplit("/", 1)[-1], None)

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()
        self._socket.close()
        if self._unix is not None:
            self._unix.close()

    # -- the server thread -------------------------------------------------------------------------

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> None:
            server = await asyncio.start_server(self._connection, sock=self._socket, limit=_READ)
            if self._unix is not None:
                self._servers.append(await asyncio.start_unix_server(self._connection, sock=self._unix, limit=_READ))
            self._started.set_result(server)

        self._loop.run_until_complete(start())
        self._loop.run_forever()

    async def _shutdown(self) -> None:
        for other in self._servers:
            other.close()
        self._server.close()
        for peer in list(self._peers):
            peer.drop()
        await self._server.wait_closed()
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _admit(self, peer: _Peer) -> bool:
        """Make room for `peer` by closing the connection idle longest; False when every one is busy."""
        if len(self._peers) >= MAX_CONNECTIONS:
            idle = [other for other in self._peers if other.idle_since is not None]
            if not idle:
                return False
            oldest = min(idle, key=lambda other: other.idle_since or 0.0)
            self._peers.discard(oldest)
            oldest.drop()
        self._peers.add(peer)
        return True

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = _Peer(reader, writer)
        if not self._admit(peer):
            writer.transport.abort()
            return
        try:
            while await self._exchange(peer):
                peer.parser.start_next_cycle()
                peer.idle_since = time.monotonic()
        except (_Closed, ConnectionError, h11.LocalProtocolError):
            return  # a malformed, abandoned or too slow request, or an answer left unread: drop the connection
        except asyncio.CancelledError:
            # `close()` cancels a connection still waiting for its next request (a program's kept-alive
            # socket the kernel had not yet reported closed). End quietly rather than cancelled: Python
            # 3.11's StreamReaderProtocol calls task.exception() on the finished task, which raises for a
            # cancelled one and prints a CancelledError traceback in the middle of the grader's output.
            return
        finally:
            peer.arm(None)
            self._release(peer)
            self._peers.discard(peer)
            peer.close()

    async def _exchange(self, peer: _Peer) -> bool:
        """Read one request and answer it; False when the connection must close after it."""
        peer.arm(IDLE_SECONDS)
        request = await peer.event()
        if not isinstance(request, h11.Request):
            return False  # the peer closed between requests
        peer.idle_since = None  # also for a request that came with the one before (its bytes already read)
        if peer.parser.their_state is h11.SEND_BODY:
            quick_ack(peer.writer.get_extra_info("socket"))  # a body sent after its head: wanted now
        arrived = time.monotonic()  # a fault's retry hint is judged from here (`arrived_at`)
        target = request.target.decode("latin-1")
        door = self._doors.get(target.split("?", 1)[0].split("/", 2)[1] if target.startswith("/") else "")
        length = _declared_length(request)
        if door is None:
            return await self._refuse(peer, _refusal(404, "no conversation here (it ended, or never began)"), length)
        if length > self._max_body:
            return await self._refuse(peer, _refusal(413, "request body too large"), length)
        if not self._reserve(peer, length):
            return await self._refuse(peer, _BUSY, length)
        if peer.parser.they_are_waiting_for_100_continue:
            await peer.send(h11.InformationalResponse(status_code=100, headers=[]))
        body = await self._body(peer)
        if isinstance(body, _Reply):
            return await self._refuse(peer, body)
        peer.arm(None)  # read whole: the door may take its time
        try:
            reply = await self._dispatch(door, request.method.decode("latin-1").upper(), target, body, arrived)
        except Exception as exc:  # noqa: BLE001 - a door must answer, whatever went wrong
            reply = _refusal(500, f"internal error: {exc!r}")
        finally:
            self._release(peer)
        try:
            whole = await peer.deliver(reply)
        except h11.LocalProtocolError as exc:  # headers the engine should never have produced
            return await self._refuse(peer, _refusal(500, f"internal error: {exc}"))
        return whole and peer.parser.our_state is h11.DONE and peer.parser.their_state is h11.DONE

    async def _body(self, peer: _Peer) -> bytes | _Reply:
        """The request's body, held within the budget; a refusal once it passes `max_body`, or when the
        budget has no room for it."""
        parts: list[bytes] = []
        size = 0
        while True:
            event = await peer.event()
            if isinstance(event, h11.EndOfMessage):
                return b"".join(parts)
            if not isinstance(event, h11.Data):
                raise _Closed
            size += len(event.data)
            if size > self._max_body:
                return _refusal(413, "request body too large")
            if size > peer.held and not self._reserve(peer, size - peer.held):
                return _BUSY
            parts.append(event.data)

    def _reserve(self, peer: _Peer, count: int) -> bool:
        if self._held + count > BODY_BUDGET:
            return False
        self._held += count
        peer.held += count
        return True

    def _release(self, peer: _Peer) -> None:
        self._held -= peer.held
        peer.held = 0

    async def _refuse(self, peer: _Peer, reply: _Reply, length: int = 0) -> bool:
        """Answer at once, keeping none of the request's body. A small rest of it (`length` declared) is
        then read and dropped, so that the connection stays usable; after a larger one, it closes."""
        self._release(peer)
        if peer.parser.our_state is h11.SEND_RESPONSE:
            await peer.deliver(reply)
        dropped = length
        while peer.parser.their_state is h11.SEND_BODY and dropped <= _READ:
            event = await peer.event()
            if not isinstance(event, (h11.Data, h11.EndOfMessage)):
                return False
            dropped += len(event.data) if isinstance(event, h11.Data) else 0
        return peer.parser.our_state is h11.DONE and peer.parser.their_state is h11.DONE

    async def _dispatch(self, door: Door, method: str, target: str, body: bytes, arrived: float) -> _Reply:
        path, _, query = target.partition("?")
        rest = "/" + (path.split("/", 2) + [""])[2]
        if rest == TOOLS_PATH and method == "POST":
            try:
                payload = json.loads(body)
            except (ValueError, RecursionError):
                return _refusal(400, "a tool run takes a JSON body")
            return _json(200, dict(await door.tool(payload)))
        with arrived_at(arrived):
            answer = door.model(method, rest, body, query)
        if isinstance(answer, Exchange):
            return _Reply(answer.status, answer.headers, answer.chunks, answer.delivery)
        status, headers, content = answer
        return _Reply(status, headers, (content,))


def _declared_length(request: h11.Request) -> int:
    """The request's Content-Length (h11 checked it is a number), 0 for a chunked body or none."""
    for name, value in request.headers:
        if name == b"content-length":
            return int(value)
    return 0
