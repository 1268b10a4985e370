"""The ASGI door: `SandboxApp`, the sandbox as an ASGI app; `sandbox serve` runs it under uvicorn.

Around the engine it answers what the real APIs answer before and beside it, and holds a client to
the limits a shared server needs:

- `GET /` and `GET /health`: the health check (the scenarios served). HEAD is GET without the body.
- CORS. The real APIs serve browsers: the OpenAI SDK's `dangerouslyAllowBrowser` and Anthropic's
  `anthropic-dangerous-direct-browser-access: true` header exist for that. Anthropic answers a
  request with an `Origin` but without that header with 401 `authentication_error` "CORS requests
  must set 'anthropic-dangerous-direct-browser-access' header", and no `access-control-allow-origin`;
  with it, `access-control-allow-origin: *` and `access-control-expose-headers: *` (curl of
  api.anthropic.com in open-pencil/open-pencil#436; the message in fishjar/kiss-translator#292).
  The sandbox answers every path that way (OpenAI's and Gemini's exact preflight headers are not
  recorded: [INF]), a preflight with 204 allowing the method and headers asked for, and
  `cors_origins` (`--cors-origin`) narrows `*` to a list of origins.
- Content-Encoding: gzip, deflate and br bodies decoded, bounded after decoding (`_encodings`).
- Limits. A body over the engine's limit is refused with a 413 as soon as its `Content-Length` (or
  the bytes read so far) pass the limit; a body must arrive within `body_timeout` seconds (else a
  408). After either, what the client still sends is read and dropped (at most `LINGER_BYTES`, for
  at most `LINGER` seconds) before the answer ends and the connection closes, so a client busy
  sending its body reads the refusal rather than a reset.
- A request whose engine work may take more than a fraction of a millisecond (a large or encoded
  body, a continuation of kept state) is answered in a worker thread: small ones go on meanwhile.
- The repeat guard's sender is the connection: the client's address and port.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any

from .._exceptions import UsageError
from ..engine._engine import Engine, Exchange
from ..engine.faults._delivery import asgi_deliver
from . import _encodings

__all__ = ["BODY_TIMEOUT", "SandboxApp", "cors_origins_of"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

BODY_TIMEOUT = 30.0
"""Seconds a client has to send the whole body: 4 MiB at 140 KB/s, far slower than any LAN."""
LINGER = 5.0
LINGER_BYTES = 16 * 1024 * 1024
"""At most this much of a refused body is read and dropped before the connection closes."""
INLINE_BYTES = 64 * 1024
"""Bodies up to this size are answered on the event loop (well under a millisecond of engine work)."""
_ANTHROPIC_PATH = "/v1/messages"
_BROWSER_HEADER = "anthropic-dangerous-direct-browser-access"
_METHODS = "GET, HEAD, POST, OPTIONS"
_PREFLIGHT_MAX_AGE = "86400"

log = logging.getLogger("sandbox.serve")


def cors_origins_of(given: Iterable[str] | None) -> tuple[str, ...]:
    """`--cors-origin` values checked: each a scheme and a host (and port), as a browser sends it."""
    origins = tuple(given or ("*",))
    for origin in origins:
        if origin != "*" and not re.fullmatch(r"https?://[^/\s]+", origin):
            raise UsageError(
                f"--cors-origin {origin}: an origin is a scheme and a host, with the port if any and no path, "
                "as a browser sends it: e.g. --cors-origin http://localhost:3000"
            )
    return origins


class SandboxApp:
    """Serves all four wire formats at their real paths, SSE included."""

    def __init__(
        self, engine: Engine, *, body_timeout: float = BODY_TIMEOUT, cors_origins: Iterable[str] = ("*",)
    ) -> None:
        self.engine = engine
        self.body_timeout = body_timeout
        origins = tuple(cors_origins)
        self.any_origin = "*" in origins
        self.origins = frozenset(origins)
        self.on_exchange: Callable[[Mapping[str, str], Exchange], None] | None = None
        """Called with each model request's headers and its answer, before the answer is sent (the
        control API's journal, `sandbox.adapters._control`)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        method: str = scope["method"]
        headers = _headers(scope)
        if method in ("GET", "HEAD") and path in ("/", "/health"):
            await self._reply(send, method, headers, self._health())
            return
        if method == "OPTIONS":
            await self._options(send, headers)
            return
        if path == _ANTHROPIC_PATH and "origin" in headers and headers.get(_BROWSER_HEADER, "").lower() != "true":
            refusal = self.engine.refuse(method, path, 401, f"CORS requests must set '{_BROWSER_HEADER}' header")
            await _send(send, refusal.status, refusal.headers, b"".join(refusal.chunks))  # no CORS headers, as the API
            return
        limit = self.engine.max_body_bytes
        length = headers.get("content-length", "")
        if length.isascii() and length.isdigit() and int(length) > limit:  # '²'.isdigit() is true
            await self._refuse(send, receive, method, headers, self.engine.refuse_oversized(method, path, int(length)))
            return
        unknown = [name for name in _encodings.encodings(headers) if name not in _encodings.DECODERS]
        if unknown:
            refusal = self.engine.refuse(method, path, 415, _encodings.unsupported(unknown[0]))
            await self._reply(send, method, headers, refusal)
            return
        try:
            body, size = await asyncio.wait_for(_read_body(receive, limit), self.body_timeout)
        except asyncio.TimeoutError:
            slow = self.engine.refuse_slow(method, path, self.body_timeout)
            await self._refuse(send, receive, method, headers, slow)
            return
        if body is None:
            await self._refuse(send, receive, method, headers, self.engine.refuse_oversized(method, path, size))
            return
        sender = _sender(scope.get("client"))
        query = scope.get("query_string", b"").decode("latin-1")
        if self.engine.runs_inline(path, body, INLINE_BYTES) and "content-encoding" not in headers:
            exchange = self._answer(method, path, query, headers, body, sender)
        else:
            exchange = await asyncio.to_thread(self._answer, method, path, query, headers, body, sender)
        if self.on_exchange is not None:
            self.on_exchange(headers, exchange)
        await self._reply(send, method, headers, exchange)

    def _answer(
        self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes, sender: str
    ) -> Exchange:
        """The engine's answer to a whole request, its body decoded; a JSON 500 if anything of ours fails."""
        try:
            names = _encodings.encodings(headers)
            if names:
                try:
                    body = _encodings.decode(body, names, self.engine.max_body_bytes)
                except _encodings.TooLarge as exc:
                    return self.engine.refuse(method, path, 413, _decoded_too_large(exc.args[0], self.engine))
                except ValueError as exc:
                    return self.engine.refuse(method, path, 400, _undecodable(*exc.args))
            return self.engine.handle(
                "GET" if method == "HEAD" else method, path, body, client=sender, query=query, headers=headers
            )
        except Exception as exc:  # noqa: BLE001 - a door must answer, whatever went wrong
            log.error("sandbox internal error on %s %s: %s: %s", method, path, type(exc).__name__, exc)
            message = json.dumps({"error": {"message": f"sandbox internal error: {type(exc).__name__}"}}).encode()
            return Exchange(method, path, 500, {"content-type": "application/json"}, (message,), b"")

    # -- answers ---------------------------------------------------------------------------------------

    def _health(self) -> Exchange:
        body = json.dumps({"status": "ok", "scenarios": sorted(self.engine.scenarios)}).encode()
        return Exchange("GET", "/health", 200, {"content-type": "application/json"}, (body,), b"")

    async def _options(self, send: Send, headers: Mapping[str, str]) -> None:
        origin = headers.get("origin")
        if origin is None or "access-control-request-method" not in headers:
            await _send(send, 204, {"allow": _METHODS}, b"")
            return
        if not self._allowed(origin):
            message = (
                f"sandbox: this server answers browsers from {', '.join(sorted(self.origins))} only (--cors-origin); "
                f"the page at {origin[:100]} is not one of them. Add it: --cors-origin {origin[:100]}"
            )
            body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
            await _send(send, 403, {"content-type": "application/json"}, body)
            return
        allowed = {
            "access-control-allow-origin": self._allow_origin(origin),
            "access-control-allow-methods": _METHODS,
            "access-control-allow-headers": headers.get("access-control-request-headers", "*") or "*",
            "access-control-max-age": _PREFLIGHT_MAX_AGE,
        }
        if not self.any_origin:
            allowed["vary"] = "origin"
        await _send(send, 204, allowed, b"")

    async def _reply(self, send: Send, method: str, headers: Mapping[str, str], exchange: Exchange) -> None:
        """Send `exchange`: in one piece, as a stream's frames are all ready and so leave in one write,
        unless it is large (then frame by frame, rather than copied whole first)."""
        out = self._with_cors(headers, exchange.headers)
        chunks = exchange.chunks
        if exchange.delivery is not None:  # a scripted fault: slowed, or the connection cut
            await asgi_deliver(send, exchange.status, out, chunks, exchange.delivery)
            return
        if method == "HEAD":
            await _send(send, exchange.status, {**out, "content-length": str(sum(map(len, chunks)))}, b"")
        elif len(chunks) > 1 and sum(map(len, chunks)) > INLINE_BYTES:
            await send({"type": "http.response.start", "status": exchange.status, "headers": _raw(out)})
            for chunk in chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        else:
            await _send(send, exchange.status, out, b"".join(chunks), stream=len(chunks) > 1)

    async def _refuse(
        self, send: Send, receive: Receive, method: str, headers: Mapping[str, str], refusal: Exchange
    ) -> None:
        """Send a refusal before the body is read whole, drop what the client still sends (within
        `LINGER_BYTES` and `LINGER` seconds), then end the answer: the server closes the connection."""
        out = {**self._with_cors(headers, refusal.headers), "connection": "close"}
        body = b"".join(refusal.chunks)
        out["content-length"] = str(len(body))
        await send({"type": "http.response.start", "status": refusal.status, "headers": _raw(out)})
        await send({"type": "http.response.body", "body": body, "more_body": True})
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(_drop(receive, LINGER_BYTES), LINGER)
        await send({"type": "http.response.body", "body": b""})

    def _with_cors(self, headers: Mapping[str, str], answer: Mapping[str, str]) -> dict[str, str]:
        out = dict(answer)
        origin = headers.get("origin")
        if origin is not None and self._allowed(origin):
            out["access-control-allow-origin"] = self._allow_origin(origin)
            out["access-control-expose-headers"] = "*"
            if not self.any_origin:
                out["vary"] = "origin"
        return out

    def _allowed(self, origin: str) -> bool:
        return self.any_origin or origin in self.origins

    def _allow_origin(self, origin: str) -> str:
        return "*" if self.any_origin else origin


def _sender(client: tuple[str, int] | None) -> str:
    """The repeat guard's key for a connection: its address and port."""
    return f"{client[0]}:{client[1]}" if client else ""


def _headers(scope: Scope) -> dict[str, str]:
    """Header names lower-cased, repeated ones joined with commas (as HTTP allows)."""
    out: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


async def _read_body(receive: Receive, limit: int) -> tuple[bytes | None, int]:
    """The body, or None (with the size read so far) as soon as it passes `limit`: the rest is not read."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(parts), size
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None, size
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts), size


async def _drop(receive: Receive, limit: int) -> None:
    """Read and forget the rest of a body, until it ends, the client goes, or `limit` bytes."""
    size = 0
    while size <= limit:
        message = await receive()
        size += len(message.get("body", b""))
        if message["type"] == "http.disconnect" or not message.get("more_body", False):
            return


def _raw(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    return [(name.encode(), value.encode()) for name, value in headers.items()]


async def _send(send: Send, status: int, headers: Mapping[str, str], body: bytes, *, stream: bool = False) -> None:
    """One answer in one piece: with its length, or (`stream`) chunked by the server, as the real APIs stream."""
    if not stream and status != 204 and "content-length" not in headers:
        headers = {**headers, "content-length": str(len(body))}
    await send({"type": "http.response.start", "status": status, "headers": _raw(headers)})
    await send({"type": "http.response.body", "body": body})


def _decoded_too_large(name: str, engine: Engine) -> str:
    return (
        f"sandbox: the request body, decoded from {name}, is over {engine.max_body_bytes} bytes; the sandbox "
        "accepts at most that after decoding. Trim the conversation, or start the sandbox with a larger limit."
    )


def _undecodable(name: str, reason: str) -> str:
    return (
        f"sandbox: the request body says Content-Encoding: {name}, but it could not be decoded as "
        f"{name} ({reason}). Send the body {name}-compressed, or drop the Content-Encoding header."
    )


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
