"""HTTP to the grader's endpoint, from the process running learner code: httpx transports for the skyl
clients, the httpx clients around them, and the tool runs.

httpx's own connection pool costs more than the sandbox's answer, and a grading run makes thousands
of requests to one loopback address, so these transports speak HTTP/1.1 over kept-alive sockets
themselves: the request bytes are httpx's, the answer is the endpoint's, nothing in between. The
clients (`DirectClient`) hand each request straight to that transport, for the same reason.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx

__all__ = ["AsyncConnections", "Connections", "DirectAsyncClient", "DirectClient"]

_TIMEOUT = 120.0
"""Seconds to wait for the endpoint; the grader's own deadline is far shorter and ends the process."""


_OURS = ("host", "content-length", "transfer-encoding", "connection")


def _request_bytes(method: str, target: str, host: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    lines = [f"{method} {target} HTTP/1.1", f"host: {host}"]
    lines += [f"{name}: {value}" for name, value in headers if name.lower() not in _OURS]
    lines.append(f"content-length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _parse_head(head: bytes) -> tuple[int, list[tuple[str, str]], int]:
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = [(name.strip(), value.strip()) for name, _, value in (line.partition(":") for line in lines[1:] if line)]
    length = next((int(value) for name, value in headers if name.lower() == "content-length"), 0)
    return status, headers, length


class BrokenAnswer(Exception):
    """The endpoint began an answer and closed the connection before its end: what a client sees as
    a connection that broke mid-answer. Raised as it is, never retried here: the learner's code must
    see the break (challenge 10)."""

    def __init__(self, status: int, headers: list[tuple[str, str]], content: bytes) -> None:
        super().__init__("peer closed connection without sending complete message body")
        self.status = status
        self.headers = headers
        self.content = content


class Connections:
    """Kept-alive sockets to one endpoint, for any number of threads: to the base URL's host and port,
    or to the Unix socket `unix` (under bubblewrap, where the worker has no network of its own)."""

    def __init__(self, base: str, unix: str | None = None) -> None:
        parts = urlsplit(base)
        self.host = parts.netloc
        self._address = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._unix = unix
        self._idle: list[tuple[socket.socket, Any]] = []
        self._lock = threading.Lock()

    def exchange(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        data = _request_bytes(method, target, self.host, headers, body)
        for attempt in range(2):
            connection, reader = self._take(fresh=attempt > 0)
            try:
                connection.sendall(data)
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline(65537)
                    if not line:
                        raise ConnectionError("the endpoint closed the connection")
                    head += line
                status, response_headers, length = _parse_head(head)
                content = reader.read(length) if length else b""
                if len(content) != length:  # an answer begun, then cut (a scripted fault): never resent
                    connection.close()
                    raise BrokenAnswer(status, response_headers, content)
            except (OSError, ValueError):
                connection.close()
                if attempt:
                    raise
                continue  # a kept-alive socket the endpoint had closed: once more on a fresh one
            with self._lock:
                self._idle.append((connection, reader))
            return status, response_headers, content
        raise AssertionError("unreachable")  # pragma: no cover

    def _take(self, *, fresh: bool) -> tuple[socket.socket, Any]:
        if not fresh:
            with self._lock:
                if self._idle:
                    return self._idle.pop()
        if self._unix is not None:
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            connection.connect(self._unix)
        else:
            connection = socket.create_connection(self._address, timeout=_TIMEOUT)
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection, connection.makefile("rb")

    def post_json(self, target: str, data: Any) -> Any:
        body = json.dumps(data).encode()
        status, _, content = self.exchange("POST", target, [("content-type", "application/json")], body)
        if status != 200:
            raise ConnectionError(f"the grader's endpoint answered {status}: {content[:200]!r}")
        return json.loads(content)

    def transport(self) -> httpx.BaseTransport:
        return _Transport(self)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection, reader in idle:
            reader.close()
            connection.close()


class _Frames(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body in the pieces it was sent in: a stream one server-sent event at a time, as the
    sandbox's own doors deliver it, so the client's parser never scans one long buffer."""

    def __init__(self, content: bytes, *, broken: bool = False) -> None:
        self._pieces = [piece for piece in _EVENT_END.split(content) if piece]
        self._broken = broken

    def __iter__(self) -> Iterator[bytes]:
        yield from self._pieces
        if self._broken:
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._pieces:
            yield piece
        if self._broken:
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")


_EVENT_END = re.compile(rb"(?<=\n\n)|(?<=\r\n\r\n)")


class _Transport(httpx.BaseTransport):
    def __init__(self, connections: Connections) -> None:
        self._connections = connections

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            status, headers, content = self._connections.exchange(
                request.method, request.url.raw_path.decode("ascii"), list(request.headers.items()), request.read()
            )
        except OSError as exc:
            raise httpx.ConnectError(str(exc), request=request) from None
        except BrokenAnswer as broken:
            frames = _Frames(broken.content, broken=True)
            return httpx.Response(broken.status, headers=broken.headers, stream=frames, request=request)
        return httpx.Response(status, headers=headers, stream=_Frames(content), request=request)


class AsyncConnections:
    """The asyncio twin of `Connections`. Connections are kept for the event loop that first used them
    (the one running the learner's coroutine); a learner may also await a tool on loops of its own
    (threads that each call asyncio.run), whose connections are used once and closed on that loop."""

    def __init__(self, base: str, unix: str | None = None) -> None:
        parts = urlsplit(base)
        self.host = parts.netloc
        self._address = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._unix = unix
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self._home: asyncio.AbstractEventLoop | None = None

    async def exchange(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        data = _request_bytes(method, target, self.host, headers, body)
        loop = asyncio.get_running_loop()
        self._home = self._home or loop
        home = loop is self._home
        for attempt in range(2):
            if home and self._idle and not attempt:
                reader, writer = self._idle.pop()
            else:
                reader, writer = await (
                    asyncio.open_unix_connection(self._unix)
                    if self._unix is not None
                    else asyncio.open_connection(*self._address)
                )
            try:
                writer.write(data)
                await writer.drain()
                status, response_headers, length = _parse_head(await reader.readuntil(b"\r\n\r\n"))
                content = await reader.readexactly(length) if length else b""
            except (OSError, ValueError, asyncio.IncompleteReadError):
                writer.close()
                if attempt:
                    raise
                continue
            if home:
                self._idle.append((reader, writer))
            else:
                writer.close()
                await writer.wait_closed()
            return status, response_headers, content
        raise AssertionError("unreachable")  # pragma: no cover

    async def post_json(self, target: str, data: Any) -> Any:
        body = json.dumps(data).encode()
        status, _, content = await self.exchange("POST", target, [("content-type", "application/json")], body)
        if status != 200:
            raise ConnectionError(f"the grader's endpoint answered {status}: {content[:200]!r}")
        return json.loads(content)

    def transport(self) -> httpx.AsyncBaseTransport:
        return _AsyncTransport(self)

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for _, writer in idle:
            writer.close()
        for _, writer in idle:
            try:
                await writer.wait_closed()
            except OSError:
                pass


class _AsyncTransport(httpx.AsyncBaseTransport):
    def __init__(self, connections: AsyncConnections) -> None:
        self._connections = connections

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            status, headers, content = await self._connections.exchange(
                request.method,
                request.url.raw_path.decode("ascii"),
                list(request.headers.items()),
                await request.aread(),
            )
        except (OSError, asyncio.IncompleteReadError) as exc:
            raise httpx.ConnectError(str(exc), request=request) from None
        return httpx.Response(status, headers=headers, stream=_Frames(content), request=request)


def _parsed_once(
    urls: dict[str, httpx.URL], url: httpx.URL | str, merge: Callable[[httpx.URL | str], httpx.URL]
) -> httpx.URL:
    """`merge(url)` (httpx's `_merge_url`), remembered for a URL given as text: a dialogue sends every
    request to the same one, which httpx would otherwise parse again for each. Shared by both clients."""
    if not isinstance(url, str):
        return merge(url)
    merged = urls.get(url)
    if merged is None:
        merged = urls[url] = merge(url)
    return merged


class DirectClient(httpx.Client):
    """The httpx client inside the learner's skyl client: each request goes straight to its transport.

    httpx's `send` runs auth, redirects, cookies and event hooks around the transport, none of which the
    grader's endpoint uses (it asks no auth, never redirects, sets no cookie), and which cost more than
    the endpoint's answer: the cookie jar alone builds a urllib request for every response. A client
    sends every request of a dialogue to one URL, parsed once."""

    def __init__(self, transport: httpx.BaseTransport) -> None:
        super().__init__(transport=transport, timeout=_TIMEOUT)
        self._urls: dict[str, httpx.URL] = {}

    def _merge_url(self, url: httpx.URL | str) -> httpx.URL:
        return _parsed_once(self._urls, url, super()._merge_url)

    def send(self, request: httpx.Request, *, stream: bool = False, **_: Any) -> httpx.Response:
        response = self._transport.handle_request(request)
        if not stream:
            response.read()
        return response


class DirectAsyncClient(httpx.AsyncClient):
    """`DirectClient` for the learner's `skyl.AsyncClient`."""

    def __init__(self, transport: httpx.AsyncBaseTransport) -> None:
        super().__init__(transport=transport, timeout=_TIMEOUT)
        self._urls: dict[str, httpx.URL] = {}

    def _merge_url(self, url: httpx.URL | str) -> httpx.URL:
        return _parsed_once(self._urls, url, super()._merge_url)

    async def send(self, request: httpx.Request, *, stream: bool = False, **_: Any) -> httpx.Response:
        response = await self._transport.handle_async_request(request)
        if not stream:
            await response.aread()
        return response
