"""Who may do what in the room: the instructor's key, learners' tokens, and the bounds on posting.

May touch: nothing but the request scope it reads. The instructor's key opens the page and its API
(sent as `?key=`, the `room_key` cookie the page sets, or `Authorization: Bearer`); a learner's token
(`Authorization: Bearer`, issued once at join) lets them post under their own name and nothing else.
Keys and tokens are compared in constant time. Posting is bounded per learner (a token bucket) and
per client address for joins, so one runaway grader loop cannot flood the room.
"""

from __future__ import annotations

import hmac
import http.cookies
import secrets
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

__all__ = ["Bucket", "RateLimit", "bearer", "header", "instructor_key", "new_secret"]


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


class Bucket:
    """`rate` posts a second on average, `burst` at once."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.stamp = time.monotonic()

    def take(self) -> float:
        """0 when a post may go ahead now, else the seconds until one may."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate


class RateLimit:
    """One bucket per key (a learner, a client address), the least recently used forgotten past `size`."""

    def __init__(self, rate: float, burst: float, size: int = 10_000) -> None:
        self.rate = rate
        self.burst = burst
        self.size = size
        self._buckets: OrderedDict[str, Bucket] = OrderedDict()

    def wait(self, key: str) -> float:
        bucket = self._buckets.pop(key, None) or Bucket(self.rate, self.burst)
        self._buckets[key] = bucket
        while len(self._buckets) > self.size:
            self._buckets.popitem(last=False)
        return bucket.take()
