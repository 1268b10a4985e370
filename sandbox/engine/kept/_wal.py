"""One SQLite file that several processes share: WAL mode, a busy timeout, and one way to change it.

May touch: the database file it is given (and SQLite's `-wal` and `-shm` beside it), nothing else.
Used by the kept-state store (`_sqlite`) and the workshop room's database (`sandbox.room._store`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["BUSY_SECONDS", "WalFile"]

BUSY_SECONDS = 5.0
"""How long a transaction waits for another process's before it fails."""


class WalFile:
    """A connection to the SQLite file at `path` in WAL mode, usable from any thread (one at a time)."""

    def __init__(self, path: str) -> None:
        self.lock = threading.Lock()
        self.db = sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[sqlite3.Connection]:
        """The lock, and one transaction: every statement in the block lands, or none does. A writing
        one (`BEGIN IMMEDIATE`) is atomic among every process that opens the file; a reading one sees
        one moment of it. A failed `COMMIT` (a busy or full disk) is rolled back too, so the
        connection is never left inside a transaction."""
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield self.db
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        with self.lock:
            self.db.close()
