"""What the HTTP doors answer before and around the engine: health, HEAD, CORS, Content-Encoding, limits.

No sockets here: `Front` takes a request's method, path, headers and body and gives a `Reply`, so
`sandbox serve`'s own HTTP protocol and the ASGI app answer byte for byte alike. What the real APIs
do, and where it is documented:

- CORS. The real APIs serve browsers: the OpenAI SDK's `dangerouslyAllowBrowser` and Anthropic's
  `anthropic-dangerous-direct-browser-access: true` header exist for that. Anthropic answers a
  request with an `Origin` but without that header with 401 `authentication_error` "CORS requests
  must set 'anthropic-dangerous-direct-browser-access' header", and no `access-control-allow-origin`;
  with it, `access-control-allow-origin: *` and `access-control-expose-headers: *` (curl of
  api.anthropic.com in open-pencil/open-pencil#436; the message in fishjar/kiss-translator#292).
  The sandbox answers every path that way (OpenAI's and Gemini's exact preflight headers are not
  recorded: [INF]), a preflight with 204 allowing the method and headers asked for, and
  `--cors-origin` narrows `*` to a list of origins.
- Content-Encoding. OpenAI's backend accepts compressed request bodies (the Codex CLI sends zstd
  and gzip to /v1/responses: zyycn/codex-proxy-rs#66), so the sandbox decodes gzip, deflate and br
  (br when the `brotli` module is installed), each bounded by the body limit *after* decoding, so a
  small zip bomb is a 413, not gigabytes of memory; any other encoding is a 415 that names it.
- HEAD is GET without the body, as HTTP says (so `HEAD /` is the health check's headers).
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..._exceptions import UsageError
from ...engine._engine import Engine, Exchange
from ...engine.faults import Delivery

__all__ = ["INLINE_BYTES", "Front", "Reply", "cors_origins_of", "sender_of"]

INLINE_BYTES = 64 * 1024
"""Bodies up to this size are answered on the event loop (well under a millisecond of engine work);
larger ones, and encoded ones, in a worker thread."""
_ANTHROPIC_PATH = "/v1/messages"
_BROWSER_HEADER = "anthropic-dangerous-direct-browser-access"
_METHODS = "GET, HEAD, POST, OPTIONS"
_PREFLIGHT_MAX_AGE = "86400"

try:  # pragma: no cover - which branch runs depends on what is installed
    import brotli as _brotli  # type: ignore[import-untyped,import-not-found,unused-ignore]
except ImportError:  # pragma: no cover
    _brotli = None


@dataclass(slots=True)
class Reply:
    """An answer for the socket: status, headers (lower-case names) and the body's pieces. Nothing
    changes one once it is made; not frozen, as every request makes one and a frozen dataclass sets
    each field through `object.__setattr__`."""

    status: int
    headers: Mapping[str, str]
    chunks: tuple[bytes, ...]
    close: bool = False
    """Close the connection after this answer (the rest of the request was not read)."""
    delivery: Delivery | None = None
    """A scripted fault's way of sending it: slowed, or cut (see `sandbox.engine.faults`)."""

    @property
    def streamed(self) -> bool:
        """More than one piece: sent with chunked framing, as the real APIs stream."""
        return len(self.chunks) > 1


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


def sender_of(client: tuple[str, int] | None) -> str:
    """The repeat guard's key for a connection: its address and port."""
    return f"{client[0]}:{client[1]}" if client else ""


class Front:
    """The engine's front desk for one server: `early` before the body is read, `answer` after."""

    def __init__(self, engine: Engine, *, cors_origins: Iterable[str] = ("*",)) -> None:
        self.engine = engine
        self.max_body = engine.max_body_bytes
        origins = tuple(cors_origins)
        self.any_origin = "*" in origins
        self.origins = frozenset(origins)

    def early(self, method: str, path: str, headers: Mapping[str, str]) -> Reply | None:
        """The answer to a request that needs no body (health, preflight, a refused size or
        encoding), or None: read the body, then call `answer`."""
        if method in ("GET", "HEAD") and path in ("/", "/health"):
            return self._reply(method, headers, self._health())
        if method == "OPTIONS":
            return self._options(path, headers)
        length = headers.get("content-length", "")
        if length.isascii() and length.isdigit() and int(length) > self.max_body:  # '²'.isdigit() is true
            return self._reply(method, headers, self.engine.refuse_oversized(method, path, int(length)), close=True)
        unknown = [name for name in _encodings(headers) if name not in _DECODERS]
        if unknown:
            return self._reply(method, headers, self.engine.refuse(method, path, 415, _unsupported(unknown[0])))
        return None

    def oversized(self, method: str, path: str, headers: Mapping[str, str], size: int) -> Reply:
        """The 413 for a body that passed the limit after `size` bytes (the rest is not read)."""
        return self._reply(method, headers, self.engine.refuse_oversized(method, path, size), close=True)

    def slow(self, method: str, path: str, headers: Mapping[str, str], seconds: float) -> Reply:
        return self._reply(method, headers, self.engine.refuse_slow(method, path, seconds), close=True)

    def heavy(self, path: str, body: bytes, headers: Mapping[str, str]) -> bool:
        """Whether answering may take more than a fraction of a millisecond: then a worker thread. A
        continuation of kept state is one, whatever its own size: its history is a stored chain's."""
        return not self.engine.runs_inline(path, body, INLINE_BYTES) or bool(_encodings(headers))

    def answer(self, method: str, path: str, query: str, headers: Mapping[str, str], body: bytes, sender: str) -> Reply:
        """The engine's answer to a whole request, its body decoded, CORS headers added."""
        encodings = _encodings(headers)
        if encodings:
            decoded = self._decode(method, path, body, encodings)
            if isinstance(decoded, Exchange):
                return self._reply(method, headers, decoded)
            body = decoded
        if path == _ANTHROPIC_PATH and "origin" in headers and headers.get(_BROWSER_HEADER, "").lower() != "true":
            refusal = self.engine.refuse(method, path, 401, f"CORS requests must set '{_BROWSER_HEADER}' header")
            return Reply(refusal.status, refusal.headers, refusal.chunks)  # no CORS headers, as the API
        exchange = self.engine.handle(
            "GET" if method == "HEAD" else method, path, body, client=sender, query=query, headers=headers
        )
        return self._reply(method, headers, exchange)

    # -- the pieces ------------------------------------------------------------------------------------

    def _health(self) -> Exchange:
        body = json.dumps({"status": "ok", "scenarios": sorted(self.engine.scenarios)}).encode()
        return Exchange("GET", "/health", 200, {"content-type": "application/json"}, (body,), b"")

    def _options(self, path: str, headers: Mapping[str, str]) -> Reply:
        origin = headers.get("origin")
        if origin is None or "access-control-request-method" not in headers:
            return Reply(204, {"allow": _METHODS}, ())
        if not self._allowed(origin):
            message = (
                f"sandbox: this server answers browsers from {', '.join(sorted(self.origins))} only (--cors-origin); "
                f"the page at {origin[:100]} is not one of them. Add it: --cors-origin {origin[:100]}"
            )
            body = json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode()
            return Reply(403, {"content-type": "application/json"}, (body,))
        allowed = {
            "access-control-allow-origin": self._allow_origin(origin),
            "access-control-allow-methods": _METHODS,
            "access-control-allow-headers": headers.get("access-control-request-headers", "*") or "*",
            "access-control-max-age": _PREFLIGHT_MAX_AGE,
        }
        if not self.any_origin:
            allowed["vary"] = "origin"
        return Reply(204, allowed, ())

    def _reply(self, method: str, headers: Mapping[str, str], exchange: Exchange, *, close: bool = False) -> Reply:
        origin = headers.get("origin")
        if origin is None and method != "HEAD":  # most requests: the engine's headers as they are
            return Reply(exchange.status, exchange.headers, exchange.chunks, close, exchange.delivery)
        out = dict(exchange.headers)
        if origin is not None and self._allowed(origin):
            out["access-control-allow-origin"] = self._allow_origin(origin)
            out["access-control-expose-headers"] = "*"
            if not self.any_origin:
                out["vary"] = "origin"
        chunks = exchange.chunks
        if method == "HEAD":
            out["content-length"] = str(sum(map(len, chunks)))
            chunks = ()
        return Reply(exchange.status, out, chunks, close, exchange.delivery)

    def _allowed(self, origin: str) -> bool:
        return self.any_origin or origin in self.origins

    def _allow_origin(self, origin: str) -> str:
        return "*" if self.any_origin else origin

    def _decode(self, method: str, path: str, body: bytes, encodings: Sequence[str]) -> bytes | Exchange:
        """The body with its encodings undone (the last applied first), never more than the limit."""
        for name in reversed(encodings):
            try:
                body = _DECODERS[name](body, self.max_body)
            except _TooLarge:
                return self.engine.refuse(
                    method,
                    path,
                    413,
                    f"sandbox: the request body, decoded from {name}, is over {self.max_body} bytes; the sandbox "
                    "accepts at most that after decoding. Trim the conversation, or start the sandbox with a "
                    "larger limit.",
                )
            except (zlib.error, OSError, ValueError, EOFError) as exc:
                return self.engine.refuse(
                    method,
                    path,
                    400,
                    f"sandbox: the request body says Content-Encoding: {name}, but it could not be decoded as "
                    f"{name} ({exc}). Send the body {name}-compressed, or drop the Content-Encoding header.",
                )
        return body


class _TooLarge(Exception):
    pass


def _encodings(headers: Mapping[str, str]) -> Sequence[str]:
    """The request's content codings in the order they were applied, identity left out."""
    value = headers.get("content-encoding")
    if value is None:  # most requests, asked three times each
        return ()
    return [name for name in (part.strip().lower() for part in value.split(",")) if name and name != "identity"]


def _unsupported(name: str) -> str:
    known = ", ".join(sorted(_DECODERS))
    hint = " (br needs the brotli package: pip install brotli)" if name == "br" else ""
    return (
        f"sandbox: the request body is encoded with Content-Encoding: {name[:100]}, which the sandbox "
        f"does not decode{hint}. Send it uncompressed, or encoded with one of: {known}."
    )


def _inflate(body: bytes, limit: int, wbits: int) -> bytes:
    decoder = zlib.decompressobj(wbits)
    out = decoder.decompress(body, limit + 1)
    if len(out) > limit or decoder.unconsumed_tail:
        raise _TooLarge
    out += decoder.flush()
    if len(out) > limit:
        raise _TooLarge
    if not decoder.eof:
        raise ValueError("the compressed data ends early")
    return out


def _gzip(body: bytes, limit: int) -> bytes:
    return _inflate(body, limit, 16 + zlib.MAX_WBITS)


def _deflate(body: bytes, limit: int) -> bytes:
    """HTTP's "deflate" is the zlib format; some clients send raw deflate, which is accepted too."""
    try:
        return _inflate(body, limit, zlib.MAX_WBITS)
    except zlib.error:
        return _inflate(body, limit, -zlib.MAX_WBITS)


def _br(body: bytes, limit: int) -> bytes:
    assert _brotli is not None
    decoder = _brotli.Decompressor()
    try:
        out: bytes = decoder.process(body, output_buffer_limit=limit + 1)
    except TypeError:  # pragma: no cover - brotli before 1.2 has no output limit: feed it a little at a time
        out = b""
        for start in range(0, len(body), 1024):
            out += decoder.process(body[start : start + 1024])
            if len(out) > limit:
                raise _TooLarge from None
    except _brotli.error as exc:
        raise ValueError(str(exc) or "not brotli data") from None
    if len(out) > limit:
        raise _TooLarge
    if not decoder.is_finished():
        raise ValueError("the compressed data ends early")
    return out


_DECODERS = {"gzip": _gzip, "x-gzip": _gzip, "deflate": _deflate, **({"br": _br} if _brotli is not None else {})}
