"""The grader's sandbox on a private loopback port, for learner code running in another process.

Each grading conversation opens a door with a secret token of its own: `http://127.0.0.1:PORT/TOKEN`
is the base URL its client gets. Under it, the providers' real paths reach the conversation's engine
(whose journal the grader judges), and `POST TOKEN/tools/run` runs one tool call, so the grader sees
every execution (its order, its overlap with others) and decides its output or failure. A request
with an unknown or closed token gets a 404 and touches nothing.

Plain HTTP/1.1 over asyncio in one thread: a few dozen lines, no framework, and any language's HTTP
client can speak it. Bodies are read up to a limit, with Content-Length or chunked.
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

from ...adapters._tcp import quick_ack, tcp_socket
from ...engine._engine import DEFAULT_MAX_BODY, Exchange
from ...engine.faults import Delivery, arrived_at

__all__ = ["TOOLS_PATH", "TOOL_ERRORS", "Door", "Endpoint"]

TOOLS_PATH = "/tools/run"
TOOL_ERRORS: dict[str, type[Exception]] = {
    error.__name__: error
    for error in (KeyError, RuntimeError, LookupError, TypeError, ValueError, TimeoutError, ConnectionError, OSError)
}
"""What the grader's tools raise, by name: the name travels between the grader and the worker, the class
is made again on the learner's side."""
_MAX_HEAD = 64 * 1024
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 413: "Payload Too Large", 500: "Internal Server Error"}


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

    def head(self) -> bytes:
        body = b"".join(self.chunks)
        head = [f"HTTP/1.1 {self.status} {_REASONS.get(self.status, 'Error')}"]
        head += [f"{name}: {value}" for name, value in self.headers.items() if name.lower() != "content-length"]
        head.append(f"content-length: {len(body)}")
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")

    def encode(self) -> bytes:
        return self.head() + b"".join(self.chunks)

    async def deliver(self, writer: asyncio.StreamWriter) -> bool:
        """Write the reply as its fault says; False: the connection was cut and must close."""
        delivery = self.delivery
        assert delivery is not None
        if delivery.first_byte:
            await asyncio.sleep(delivery.first_byte)
        if delivery.cut_after == 0:
            return False
        writer.write(self.head())
        for index, chunk in enumerate(self.chunks):
            if index == delivery.cut_after:
                return False
            if index and delivery.between:
                await writer.drain()
                await asyncio.sleep(delivery.between)
            writer.write(chunk)
        return delivery.cut_after is None


def _json(status: int, data: Any) -> _Reply:
    return _Reply(status, {"content-type": "application/json"}, (json.dumps(data).encode(),))


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
        self._writers: set[asyncio.StreamWriter] = set()
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
            server = await asyncio.start_server(self._connection, sock=self._socket, limit=_MAX_HEAD)
            if self._unix is not None:
                self._servers.append(
                    await asyncio.start_unix_server(self._connection, sock=self._unix, limit=_MAX_HEAD)
                )
            self._started.set_result(server)

        self._loop.run_until_complete(start())
        self._loop.run_forever()

    async def _shutdown(self) -> None:
        for other in self._servers:
            other.close()
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        await self._server.wait_closed()
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return  # the client closed the connection between requests
                arrived = time.monotonic()  # a fault's retry hint is judged from here (`arrived_at`)
                quick_ack(writer.get_extra_info("socket"))  # a body sent after its head: wanted now
                method, target, headers = _parse_head(head)
                body = await _read_body(reader, headers, self._max_body)
                reply = _json(413, {"error": {"message": "request body too large"}}) if body is None else None
                if reply is None:
                    assert body is not None
                    try:
                        reply = await self._dispatch(method, target, body, arrived)
                    except Exception as exc:  # noqa: BLE001 - a door must answer, whatever went wrong
                        reply = _json(500, {"error": {"message": f"sandbox internal error: {exc!r}"}})
                if reply.delivery is not None:
                    whole = await reply.deliver(writer)
                    await writer.drain()
                    if not whole:
                        return
                else:
                    writer.write(reply.encode())
                    await writer.drain()
                if body is None or headers.get("connection", "").lower() == "close":
                    return
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
            return  # a malformed or abandoned request: drop the connection
        except asyncio.CancelledError:
            # `close()` cancels a connection still waiting for its next request (a program's kept-alive
            # socket the kernel had not yet reported closed). End quietly rather than cancelled: Python
            # 3.11's StreamReaderProtocol calls task.exception() on the finished task, which raises for a
            # cancelled one and prints a CancelledError traceback in the middle of the grader's output.
            return
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _dispatch(self, method: str, target: str, body: bytes, arrived: float) -> _Reply:
        path, _, query = target.partition("?")
        _, token, rest = (path.split("/", 2) + ["", ""])[:3]
        door = self._doors.get(token)
        if door is None:
            return _json(404, {"error": {"message": "sandbox: no conversation here (it ended, or never began)"}})
        rest = "/" + rest
        if rest == TOOLS_PATH and method == "POST":
            try:
                payload = json.loads(body)
            except (ValueError, RecursionError):
                return _json(400, {"error": {"message": "sandbox: a tool run takes a JSON body"}})
            return _json(200, dict(await door.tool(payload)))
        with arrived_at(arrived):
            answer = door.model(method, rest, body, query)
        if isinstance(answer, Exchange):
            return _Reply(answer.status, answer.headers, answer.chunks, answer.delivery)
        status, headers, content = answer
        return _Reply(status, headers, (content,))


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return method.upper(), target, headers


async def _read_body(reader: asyncio.StreamReader, headers: Mapping[str, str], limit: int) -> bytes | None:
    """The body, or None once it passes `limit` bytes."""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        parts: list[bytes] = []
        size = 0
        while True:
            length = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if length == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass  # trailers
                return b"".join(parts)
            size += length
            if size > limit:
                return None
            parts.append(await reader.readexactly(length))
            await reader.readexactly(2)
    length = int(headers.get("content-length", "0"))
    if length > limit:
        return None
    return await reader.readexactly(length) if length else b""
