"""`sandbox record`: a recording proxy in front of a real provider, as an ASGI app under uvicorn.

`RecordingProxy` forwards every request (any path, any of the four wire formats, streamed or not)
to `upstream` with httpx, and returns the upstream's answer unchanged, streamed as it arrives.
The request goes as the client sent it, less the hop-by-hop headers and `Accept-Encoding` (asked
for plain bytes, so what passes is what is recorded). An upstream that cannot be reached is a 502
whose body says so.

`Recorder` keeps what passed: after each exchange it appends the exchange to `NAME.jsonl` and
writes the scenario of the conversation it belongs to again (`NAME.toml`, `NAME_2.toml`, ...;
`sandbox.engine._recorded`), so a recorder stopped at any moment leaves every file whole.
Secrets never reach a file: headers that carry credentials (`Authorization`, `x-api-key`,
`x-goog-api-key`, `api-key`, cookies, any name with key, token, secret or auth in it) and query
parameters such as `key=` are left out (`redacted`).

May touch: the upstream (only the URL it was given) and the files it writes in `out`.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import httpx

from ..engine._recorded import Recording, Transcription
from . import _encodings
from ._serve import listen, make_server, signals_end_the_server

__all__ = ["Recorder", "RecordingProxy", "redacted", "redacted_query", "run_proxy"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MAX_BODY = 64 * 1024 * 1024
"""A request body over this is refused (413): no provider takes one that large."""
_SECRET = re.compile(r"auth|cookie|key|token|secret|session|signature|password", re.IGNORECASE)
_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "host"}
)


def redacted(headers: Mapping[str, str]) -> dict[str, str]:
    """`headers` without any that may carry a credential."""
    return {name: value for name, value in headers.items() if not _SECRET.search(name)}


def redacted_query(query: str) -> str:
    """A query string without its credential parameters (Gemini's `key=`, and their kin)."""
    return urlencode(
        [(name, value) for name, value in parse_qsl(query, keep_blank_values=True) if not _SECRET.search(name)]
    )


class Recorder:
    """What passed through the proxy: `out/NAME.jsonl` (each exchange, appended) and `out/NAME.toml`
    (the scenario, rewritten after each exchange; further conversations `NAME_2.toml`, ...)."""

    def __init__(self, out: Path, name: str, source: str) -> None:
        self.out = out
        self.name = name
        self.source = source
        self.exchanges = 0
        """Exchanges kept so far."""
        self.transcription = Transcription(name=name, source=source)
        self.written: list[Path] = []
        self._lock = threading.Lock()
        out.mkdir(parents=True, exist_ok=True)
        self.raw = out / f"{name}.jsonl"
        self.raw.write_text("", encoding="utf-8")

    def add(self, recording: Recording, sent: Mapping[str, str], answered: Mapping[str, str]) -> None:
        """Keep one exchange; `sent` and `answered` are its request's and its answer's headers."""
        line = {
            "method": recording.method,
            "path": recording.path,
            "query": recording.query,
            "status": recording.status,
            "request_headers": redacted(sent),
            "request_body": _text(recording.request_body),
            "response_headers": redacted(answered),
            "response_body": _text(recording.response_body),
        }
        with self._lock:
            self.exchanges += 1
            with self.raw.open("a", encoding="utf-8") as file:
                file.write(json.dumps(line, ensure_ascii=False) + "\n")
            index = self.transcription.add(recording)
            if index is None:
                return
            name, text = self.transcription.scenario(index)
            path = self.out / f"{name}.toml"
            partial = path.with_suffix(".toml.part")
            partial.write_text(text, encoding="utf-8")
            partial.replace(path)
            if path not in self.written:
                self.written.append(path)


def _text(body: bytes) -> Any:
    """A body as text in the JSONL file; bytes that are not UTF-8 as `{"base64": ...}`."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(body).decode("ascii")}


class RecordingProxy:
    """Forwards to `upstream` (a base URL: scheme, host, port, and a path prefix if any) and hands
    each exchange to `recorder`."""

    def __init__(self, upstream: str, recorder: Recorder, *, timeout: float = 600.0) -> None:
        self.upstream = upstream.rstrip("/")
        self.recorder = recorder
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers: dict[str, str] = {}
        for raw_name, raw_value in scope.get("headers", ()):
            name = raw_name.decode("latin-1").lower()
            value = raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        body = await _body(receive)
        if body is None:
            await _reply(send, 413, f"sandbox record: the request body is over {MAX_BODY} bytes.")
            return
        query = scope.get("query_string", b"").decode("latin-1")
        url = f"{self.upstream}{scope['path']}" + (f"?{query}" if query else "")
        forwarded = {name: value for name, value in headers.items() if name not in _HOP_BY_HOP}
        forwarded.pop("content-length", None)
        forwarded["accept-encoding"] = "identity"
        chunks: list[bytes] = []
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            try:
                request = client.build_request(scope["method"], url, headers=forwarded, content=body)
                response = await client.send(request, stream=True)
            except httpx.HTTPError as exc:
                await _reply(send, 502, f"sandbox record: the upstream {self.upstream} did not answer ({exc!r}).")
                return
            answer = [
                (name.encode("latin-1"), value.encode("latin-1"))
                for name, value in response.headers.multi_items()
                if name.lower() not in _HOP_BY_HOP
            ]
            try:
                await send({"type": "http.response.start", "status": response.status_code, "headers": answer})
                async for chunk in response.aiter_raw():
                    chunks.append(chunk)
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            except httpx.HTTPError:
                pass  # the upstream broke off mid-answer: the client sees the same cut, and it is recorded
            finally:
                await response.aclose()
        raw = b"".join(chunks)
        names = _encodings.encodings(dict(response.headers))
        if names:
            try:
                raw = _encodings.decode(raw, names, MAX_BODY)
            except (ValueError, _encodings.TooLarge):
                pass
        recording = Recording(
            method=scope["method"],
            path=scope["path"],
            status=response.status_code,
            request_body=body,
            response_body=raw,
            query=redacted_query(query),
            content_type=response.headers.get("content-type", ""),
        )
        self.recorder.add(recording, headers, dict(response.headers))


async def _body(receive: Receive) -> bytes | None:
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return None
        parts.append(chunk)
        if message["type"] == "http.disconnect" or not message.get("more_body", False):
            return b"".join(parts)


async def _reply(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": {"message": message, "type": "sandbox_record_error"}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def run_proxy(proxy: RecordingProxy, *, host: str, port: int, ready: Callable[[int], None]) -> None:
    """Serve `proxy` under uvicorn, as `sandbox serve` serves the sandbox, until SIGTERM or SIGINT;
    `ready` gets the bound port (the one chosen for `port=0`)."""
    sock = listen(host, port)
    try:
        ready(sock.getsockname()[1])
        server = make_server(proxy)
        with signals_end_the_server():
            server.run(sockets=[sock])
    finally:
        sock.close()
