"""An answer as the bytes of one write: status line, headers, body (chunked framing for a stream)."""

from __future__ import annotations

import time
from http import HTTPStatus

from ._answer import Reply

__all__ = ["encode", "encode_head"]

_STATUS = {code.value: f"HTTP/1.1 {code.value} {code.phrase}\r\n".encode() for code in HTTPStatus}
_OWN_HEADERS = frozenset({"content-length", "transfer-encoding", "connection", "date"})


_date = (0, b"")


def _date_header() -> bytes:
    """`date: ...\\r\\n`, formatted once a second."""
    global _date
    now = int(time.time())
    if _date[0] != now:
        _date = (now, b"date: " + time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now)).encode() + b"\r\n")
    return _date[1]


def encode(reply: Reply, *, keep: bool, chunked: bool) -> bytes:
    """The whole answer as one piece of bytes: head, then the body (chunked framing for a stream)."""
    parts = [_STATUS.get(reply.status) or f"HTTP/1.1 {reply.status} Unknown\r\n".encode(), _date_header()]
    own = _OWN_HEADERS
    parts.append(
        "".join([f"{name}: {value}\r\n" for name, value in reply.headers.items() if name not in own]).encode("latin-1")
    )
    if chunked:  # every frame is ready: one chunk holds them all (a client reads events, not chunks)
        parts.append(b"transfer-encoding: chunked\r\n")
        frames = b"".join(reply.chunks)
        body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(frames), frames) if frames else b"0\r\n\r\n"
    else:
        body = b"".join(reply.chunks)
        if reply.status != 204 and reply.status >= 200:
            parts.append(b"content-length: %s\r\n" % reply.headers.get("content-length", str(len(body))).encode())
    if not keep:
        parts.append(b"connection: close\r\n")
    parts.append(b"\r\n")
    parts.append(body)
    return b"".join(parts)


def encode_head(status: int, headers: list[tuple[bytes, bytes]], *, chunked: bool, keep: bool) -> bytes:
    """A head for an answer an ASGI app sends piece by piece (see `_cycle`)."""
    parts = [_STATUS.get(status) or f"HTTP/1.1 {status} Unknown\r\n".encode(), _date_header()]
    parts += [name + b": " + value + b"\r\n" for name, value in headers if name not in (b"connection", b"date")]
    if chunked:
        parts.append(b"transfer-encoding: chunked\r\n")
    if not keep:
        parts.append(b"connection: close\r\n")
    parts.append(b"\r\n")
    return b"".join(parts)
