"""Messages between the grader and its worker processes: length-prefixed JSON over a stream socket.

JSON, never pickle: the grader reads what a learner's process sends, and unpickling would run code.
A frame over its reader's limit, or one that is not a JSON object, is a broken worker. The grader
reads at most `ANSWER_LIMIT` bytes a frame from a worker (what it parses stays within a few tens of
MiB whatever the frame holds); a worker reads up to `MAX_FRAME` (a submission's escaped source).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from typing import Any

__all__ = [
    "ANSWER_LIMIT",
    "MAX_FRAME",
    "BrokenFrame",
    "FrameBuffer",
    "ImplementationError",
    "encode",
    "receive",
    "send",
]

_HEADER = struct.Struct(">I")
MAX_FRAME = 64 * 1024 * 1024
ANSWER_LIMIT = 1024 * 1024


class ImplementationError(Exception):
    """The implementation file is missing or does not import; the message says which line and why.

    Raised by the worker's loader, whose message travels in a `loaded` reply, and by the grader when
    the import hangs or ends the worker."""


class BrokenFrame(Exception):
    """The other side sent something that is not a message."""


def encode(message: dict[str, Any]) -> bytes:
    data = json.dumps(message, separators=(",", ":")).encode()
    if len(data) > MAX_FRAME:
        raise BrokenFrame(f"a message of {len(data)} bytes is over the {MAX_FRAME} limit")
    return _HEADER.pack(len(data)) + data


class FrameBuffer:
    """Bytes in, whole messages out: each at most `limit` bytes, refused from its header on."""

    def __init__(self, limit: int = MAX_FRAME) -> None:
        self._data = bytearray()
        self._limit = limit

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._data += data
        messages = []
        while len(self._data) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._data)
            if size > self._limit:
                raise BrokenFrame(f"a frame of {size} bytes is over the {self._limit} limit")
            if len(self._data) < _HEADER.size + size:
                break
            payload = bytes(self._data[_HEADER.size : _HEADER.size + size])
            del self._data[: _HEADER.size + size]
            try:
                message = json.loads(payload)
            except (ValueError, RecursionError):
                raise BrokenFrame("a frame that is not JSON") from None
            if not isinstance(message, dict):
                raise BrokenFrame("a frame that is not a JSON object")
            messages.append(message)
        return messages


_SEND = threading.Lock()


def send(connection: socket.socket, message: dict[str, Any]) -> None:
    """Send one message; safe from several threads of one process."""
    data = encode(message)
    with _SEND:
        connection.sendall(data)


def receive(connection: socket.socket, buffer: FrameBuffer, pending: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The next message (blocking), or None once the other side closed the connection."""
    while not pending:
        data = connection.recv(1 << 20)
        if not data:
            return None
        pending.extend(buffer.feed(data))
    return pending.pop(0)
