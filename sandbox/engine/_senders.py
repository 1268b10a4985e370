"""Who is asking: the keys the engine counts and scopes by, from what each adapter knows of a request.

May touch: nothing but the request's own facts (its thread and task, its headers). Two keys with two
jobs: the sender (`caller_key`, or the TCP connection for the server) is what the repeat guard
counts per, and the owner (`owner_key`) is whose kept state a request may reach.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import threading
from collections.abc import Mapping

__all__ = ["caller_key", "owner_key"]


def caller_key() -> str:
    """Who is asking, for an in-process adapter: the calling thread, and the asyncio task within it.

    The repeat guard counts identical requests per caller, so that 64 threads of one test suite
    sending the same first request are 64 callers, while a loop resending one request is one.
    """
    # Asked first without raising: `current_task()` raises outside a loop, the common case of a sync
    # client.
    loop = asyncio._get_running_loop()
    task = asyncio.current_task(loop) if loop is not None else None
    thread = f"thread:{threading.get_ident()}"
    return thread if task is None else f"{thread}/task:{id(task)}"


def owner_key(headers: Mapping[str, str]) -> str:
    """Whose kept state a request may reach: a digest of the credential it carries (`authorization`,
    less its `Bearer ` prefix, `x-api-key`, `api-key` or `x-goog-api-key`; the same key in any of them
    is the same owner), as a real provider scopes stored responses and threads to the key that made
    them. `headers` must have lower-case names. No credential: the empty owner."""
    for name in ("authorization", "x-api-key", "api-key", "x-goog-api-key"):
        value = headers.get(name)
        if value:
            return _owner_of(value.removeprefix("Bearer ").strip() if name == "authorization" else value.strip())
    return ""


@functools.lru_cache(maxsize=1024)
def _owner_of(credential: str) -> str:
    """The owner a credential names. Memoised: a sender sends its key with every request, and a room
    holds about a hundred."""
    return hashlib.blake2b(credential.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()
