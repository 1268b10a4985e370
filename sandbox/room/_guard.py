"""Who may do what in the room: the instructor's key, learners' tokens, and the bounds on posting.

May touch: the request scope it reads, and for the rate limits the room's database. The
instructor's key opens the page and its API (sent as `?key=`, the `room_key` cookie the page sets,
or `Authorization: Bearer`); a learner's token (`Authorization: Bearer`, issued once at join) lets
them post under their own name and nothing else.
Keys and tokens are compared in constant time. Posting is bounded per learner (a token bucket) and
per client address for joins, so one runaway grader loop cannot flood the room, whichever worker
process its requests reach.
"""

from __future__ import annotations

import hmac
import http.cookies
import secrets
import urllib.parse
from collections.abc import Mapping
from typing import Any

from ._store import RoomDatabase

__all__ = ["RateLimit", "bearer", "header", "instructor_key", "new_secret"]


def new_secret(prefix: str) -> str:
    """A secret nobody can guess: 32 random bytes, URL-safe, with a prefix saying what it is."""
    return f"{prefix}{secrets.token_urlsafe(32)}"


def header(scope: Mapping[str, Any], wanted: str) -> str | None:
    for raw_name, raw_value in scope.get("headers", ()):
        if raw_name.decode("latin-1").lower() == wanted:
            return str(raw_value.decode("latin-1"))
    return None


def bearer(scope: Mapping[str, Any]) -> str | None:
    value = header(scope, "authorization")
    if value is None or value[:7].lower() != "bearer ":
        return None
    return value[7:].strip() or None


def instructor_key(scope: Mapping[str, Any]) -> str | None:
    """The instructor's key as this request carries it, if it does: query, cookie, or bearer."""
    raw: bytes = scope.get("query_string", b"")
    query = urllib.parse.parse_qs(raw.decode("latin-1"))
    if query.get("key"):
        return query["key"][-1]
    cookie = header(scope, "cookie")
    if cookie:
        jar: http.cookies.SimpleCookie = http.cookies.SimpleCookie()
        try:
            jar.load(cookie)
        except http.cookies.CookieError:
            jar = http.cookies.SimpleCookie()
        if "room_key" in jar:
            return str(jar["room_key"].value)
    return bearer(scope)


def same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


class RateLimit:
    """`rate` posts a second on average, `burst` at once, per key (a learner, a client address), counted
    in the room's database so that every worker process holds a sender to the one limit."""

    def __init__(self, store: RoomDatabase, kind: str, rate: float, burst: float) -> None:
        self.store = store
        self.kind = kind
        self.rate = rate
        self.burst = burst

    def wait(self, key: str) -> float:
        """0 when a post may go ahead now, else the seconds until one may (blocking: call it from a thread)."""
        return self.store.take(f"{self.kind}:{key}", self.rate, self.burst)
