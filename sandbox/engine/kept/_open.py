"""The store a URL names (`sandbox serve --store URL`, `Engine(store=URL)`).

May touch: nothing but the backends' constructors; a backend's client library is imported by the
backend only when its URL is given.
"""

from __future__ import annotations

from ..._exceptions import UsageError
from ._memory import MemoryStore
from ._redis import RedisStore
from ._sqlite import SQLiteStore
from ._store import Store

__all__ = ["open_store"]


def open_store(url: str, max_entries: int, max_bytes: int) -> Store:
    """The store `url` names: `memory`, `sqlite:///PATH` or `redis://HOST:PORT/DB`; a `UsageError` that
    says what to write for anything else."""
    if not isinstance(url, str):
        raise UsageError(f"store={url!r}: use 'memory', 'sqlite:///PATH' or 'redis://HOST:PORT/DB'.")
    if url == "memory":
        return MemoryStore(max_entries, max_bytes)
    if url.startswith("sqlite:///") and len(url) > len("sqlite:///"):
        return SQLiteStore(url[len("sqlite:///") :], max_entries, max_bytes)
    if url.startswith(("redis://", "rediss://")):
        return RedisStore(url, max_entries, max_bytes)
    raise UsageError(
        f"store={url!r}: not a store the sandbox knows. Use one of:\n"
        "- memory (the default: this process only)\n"
        "- sqlite:///PATH (several processes on one machine; survives a restart), e.g. sqlite:///kept.db\n"
        "- redis://HOST:PORT/DB (several machines; needs `pip install skyl-sandbox[redis]`)"
    )
