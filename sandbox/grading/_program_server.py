"""A private sandbox on a free loopback port, for one graded case: the door a program walks through.

    POST the providers' real paths          the model (the engine; every exchange journaled)
    GET  /sandbox/tools                     the scenario's tools: [{name, description, parameters}]
    POST /sandbox/tools/{name}              run one call; the body is its arguments, a JSON object;
                                            200 with the output as text, or an error status with
                                            the error as text (404 unknown tool, 500 the tool failed)

Everything the grader judges reaches it here, in its own process: the requests, and every tool
execution with its order and overlap. The standard library's threading server keeps it small and
quick to start (one per case); each connection gets a thread, so a turn's tool calls can overlap.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import unquote

from .._engine import Engine, Exchange
from ._tooldesk import ToolDesk

__all__ = ["TOOLS_PATH", "Door", "Endpoint"]

TOOLS_PATH = "/sandbox/tools"


class Door(Protocol):
    """What one case serves: the model (its engine, and a journal the door keeps)."""

    engine: Engine

    def model(self, method: str, path: str, body: bytes) -> Exchange: ...


class Endpoint:
    """Serves `door` and `desk` on 127.0.0.1 until closed. Use as a context manager."""

    def __init__(self, door: Door, desk: ToolDesk) -> None:
        self.door = door
        self.desk = desk
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
        path = self.path.split("?", 1)[0]
        if path == TOOLS_PATH:
            self._reply(200, "application/json", [json.dumps(self.server.endpoint.desk.describe()).encode()])
        else:
            self._model("GET", path)

    def do_POST(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0]
        if path.startswith(TOOLS_PATH + "/"):
            self._tool(unquote(path[len(TOOLS_PATH) + 1 :]))
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

    def _tool(self, name: str) -> None:
        body = self._body(1024 * 1024)
        try:
            arguments: Any = json.loads(body or b"{}") if body is not None else None
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            text = 'the body must be the call\'s arguments as a JSON object, e.g. {"city": "Paris"}'
            self._reply(400, "text/plain; charset=utf-8", [text.encode()])
            return
        reply = self.server.endpoint.desk.run(name, arguments)
        self._reply(reply.status, "text/plain; charset=utf-8", [reply.text.encode()])

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
