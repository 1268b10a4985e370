"""A private sandbox on a free loopback port, for one graded case: the door a program walks through.

    POST /tools/run      {"name": ..., "arguments": {...}}: one tool run, answered by the door's
                         `tool()` as JSON ({"output": ...} or {"error": ...})
    anything else        the door's `model()`: the providers' real paths (the engine; every exchange
                         journaled), and GET /tools (the scenario's tools)

Everything the grader judges reaches it here, in its own process: the requests, and every tool
execution with its order and overlap. The standard library's threading server keeps it small and
quick to start (one per case); each connection gets a thread, so a turn's tool calls can overlap.
The door's shape is the one issue 11's asyncio endpoint serves, so either server can carry it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from .._engine import Engine, Exchange

__all__ = ["TOOLS_PATH", "Door", "Endpoint"]

TOOLS_PATH = "/tools/run"


class Door(Protocol):
    """What one case serves: model requests (with its engine's body limit), and tool runs."""

    engine: Engine

    def model(self, method: str, path: str, body: bytes) -> Exchange: ...

    def tool(self, payload: Any) -> Mapping[str, Any]: ...


class Endpoint:
    """Serves `door` on 127.0.0.1 until closed. Use as a context manager."""

    def __init__(self, door: Door) -> None:
        self.door = door
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.endpoint = self
        self._thread = threading.Thread(target=self._serve, name="sandbox-endpoint", daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Endpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _serve(self) -> None:
        self._server.serve_forever(poll_interval=0.02)  # shutdown() waits up to one interval

    def close(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join()
        self._server.server_close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    endpoint: Endpoint


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms delayed-ACK stall
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 - the name http.server dispatches to
        self._model("GET", self.path.split("?", 1)[0])

    def do_POST(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0]
        if path == TOOLS_PATH:
            self._tool()
        else:
            self._model("POST", path)

    def _model(self, method: str, path: str) -> None:
        door = self.server.endpoint.door
        body = self._body(door.engine.max_body_bytes)
        if body is None:
            exchange = door.engine.refuse_oversized(method, path, int(self.headers.get("content-length", 0)))
        else:
            exchange = door.model(method, path, body)
        self._reply(exchange.status, exchange.headers.get("content-type", "application/json"), exchange.chunks)

    def _tool(self) -> None:
        body = self._body(1024 * 1024)
        try:
            payload: Any = json.loads(body) if body is not None else None
        except (ValueError, RecursionError):
            payload = None
        if payload is None:
            reply: Mapping[str, Any] = {"error": 'a tool run takes a JSON body: {"name": ..., "arguments": {...}}'}
            self._reply(400, "application/json", [json.dumps(reply).encode()])
            return
        reply = self.server.endpoint.door.tool(payload)
        self._reply(200, "application/json", [json.dumps(reply).encode()])

    def _body(self, limit: int) -> bytes | None:
        """The request body (plain or chunked), or None past `limit` bytes (the rest is not read, and
        the connection is closed after the answer)."""
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            parts: list[bytes] = []
            size = 0
            while True:
                length = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if length == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                size += length
                if size > limit:
                    self.close_connection = True
                    return None
                parts.append(self.rfile.read(length))
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        if length > limit:
            self.close_connection = True
            return None
        return self.rfile.read(length) if length else b""

    def _reply(self, status: int, content_type: str, chunks: tuple[bytes, ...] | list[bytes]) -> None:
        """The body with its length, written one chunk at a time (a stream's SSE frames arrive as
        frames, as from the real API)."""
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(sum(len(chunk) for chunk in chunks)))
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(chunk)
            self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Quiet: the journal is the log."""
