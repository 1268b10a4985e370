"""What a connection holds a client to, and what it knows of one request. No sockets, no engine."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._answer import Reply

__all__ = ["LINGER_BYTES", "MAX_HEAD", "NEVER", "SWEEP", "Limits", "Request"]

MAX_HEAD = 64 * 1024
LINGER_BYTES = 256 * 1024 * 1024
"""At most this much of a refused body is read and dropped before the connection is cut."""
NEVER = float("inf")
SWEEP = 0.25
"""Seconds between the sweeps that enforce every deadline: one timer for the server, none per request."""


@dataclass(frozen=True)
class Limits:
    """Seconds each stage may take (see `_connection`'s docstring)."""

    head_timeout: float = 10.0
    body_timeout: float = 30.0
    keep_alive: float = 5.0
    write_timeout: float = 5.0
    linger: float = 5.0


@dataclass(slots=True)
class Request:
    """One request as its head said it, and its body as it arrives."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    keep_alive: bool
    http10: bool
    body: list[bytes] = field(default_factory=list)
    reply: Reply | None = None
    """Answered before its body was read (health, preflight, a refused encoding)."""
