"""The SQLite backend of kept state: several processes on one machine share one file, and it survives
a restart.

May touch: its database file (and SQLite's `-wal` and `-shm` beside it), nothing else. The file is in
WAL mode, so readers never wait for the writer; every method is one writing transaction
(`_wal.WalFile.transaction`), which makes it atomic among all the processes that open the file.
Entries are rows; the least recently used is the row with the smallest `used`, a counter every use
advances. Snapshots are in-process objects: this backend keeps none, so a continuation walks its
chain's history whole.
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..._exceptions import UsageError
from .._repeats import REPEAT_WINDOW, Repeats
from ._store import ENTRY_OVERHEAD, HOLD_SECONDS, REMEMBER_EVICTED, Blocks, Claim, Entry, Store, StoreUnavailable, T
from ._wal import WalFile

__all__ = ["SQLiteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY, parent TEXT, owner TEXT NOT NULL, items BLOB NOT NULL, fields BLOB NOT NULL,
    prefix BLOB NOT NULL, size INTEGER NOT NULL, continued INTEGER NOT NULL, in_flight REAL NOT NULL,
    used INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_used ON entries (used);
CREATE TABLE IF NOT EXISTS evicted (key TEXT PRIMARY KEY, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS evicted_seq ON evicted (seq);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO counters VALUES ('used', 0), ('count', 0), ('bytes', 0), ('evictions', 0), ('answers', 1),
    ('moved', 0);
CREATE TABLE IF NOT EXISTS seen (
    sender TEXT NOT NULL, history INTEGER NOT NULL, count INTEGER NOT NULL, last REAL NOT NULL, mark INTEGER NOT NULL,
    PRIMARY KEY (sender, history)
);
CREATE INDEX IF NOT EXISTS seen_last ON seen (last);
CREATE TABLE IF NOT EXISTS moved (history INTEGER PRIMARY KEY, mark INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS records (key TEXT PRIMARY KEY, value BLOB NOT NULL, expires REAL NOT NULL);
CREATE INDEX IF NOT EXISTS records_expires ON records (expires);
CREATE INDEX IF NOT EXISTS moved_mark ON moved (mark);
"""
REMEMBER_MOVED = 10_000
"""Conversations whose moving on the repeat guard remembers, the latest kept."""
_CHAIN = """
WITH RECURSIVE chain (key, parent, depth) AS (
    SELECT key, parent, 0 FROM entries WHERE key = ?
    UNION ALL SELECT entries.key, entries.parent, chain.depth + 1 FROM entries JOIN chain ON entries.key = chain.parent
)
SELECT chain.key, chain.parent, entries.items, entries.prefix FROM chain JOIN entries USING (key) ORDER BY depth DESC
"""


class SQLiteStore(Store):
    """Kept state in the SQLite file at `path`, shared by every process that opens it."""

    def __init__(self, path: str, max_entries: int, max_bytes: int) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self.path = Path(path)
        self.where = f"the SQLite file {self.path} (`--store sqlite:///{self.path}`), bounded"
        self._process = secrets.token_hex(8)
        """Tells this process's senders (a connection, a thread) from another's of the same name."""
        try:
            self._file = WalFile(path)
            self._file.db.executescript(_SCHEMA)
            with self._file.transaction() as db:
                db.execute("INSERT OR IGNORE INTO counters VALUES ('secret', ?)", (secrets.randbits(63),))
                (secret,) = db.execute("SELECT value FROM counters WHERE name = 'secret'").fetchone()
        except sqlite3.Error as exc:
            raise UsageError(
                f"store='sqlite:///{path}': SQLite cannot open that file ({exc}). Give a path in a folder that "
                "exists and that this user may write, e.g. sqlite:///kept.db."
            ) from None
        self._key = int(secret).to_bytes(8, "big")

    # -- the repeat guard's view (`_repeats.Repeats`) ----------------------------------------------

    def repeats(self) -> Repeats:
        return self

    def digest(self, value: object) -> int:
        text = repr(value).encode("utf-8", "surrogatepass")
        return int.from_bytes(hashlib.blake2b(text, digest_size=8, key=self._key).digest(), "big", signed=True)

    def moved_on(self, history: int) -> None:
        with self._tx() as db:
            mark = self._add(db, "moved", 1)
            db.execute("INSERT OR REPLACE INTO moved VALUES (?, ?)", (history, mark))
            db.execute("DELETE FROM moved WHERE mark <= ?", (mark - REMEMBER_MOVED,))

    def count(self, sender: str, history: int) -> int:
        now, sender = time.time(), f"{self._process}/{sender}"
        with self._tx() as db:
            row = db.execute("SELECT mark FROM moved WHERE history = ?", (history,)).fetchone()
            moved = row[0] if row is not None else 0
            row = db.execute("SELECT count, last, mark FROM seen WHERE sender = ? AND history = ?", (sender, history))
            seen = row.fetchone()
            count = seen[0] + 1 if seen is not None and now - seen[1] <= REPEAT_WINDOW and seen[2] == moved else 1
            db.execute("INSERT OR REPLACE INTO seen VALUES (?, ?, ?, ?, ?)", (sender, history, count, now, moved))
            db.execute("DELETE FROM seen WHERE last < ?", (now - REPEAT_WINDOW,))
            return count

    def record(self, key: str, change: Callable[[bytes | None], tuple[bytes, T]], ttl: float) -> T:
        now = time.time()
        with self._tx() as db:
            row = db.execute("SELECT value FROM records WHERE key = ? AND expires > ?", (key, now)).fetchone()
            value, said = change(row[0] if row is not None else None)
            db.execute("INSERT OR REPLACE INTO records VALUES (?, ?, ?)", (key, value, now + ttl))
            db.execute("DELETE FROM records WHERE expires <= ?", (now,))
            return said

    # -- kept state ---------------------------------------------------------------------------------

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One transaction; a store that fails it (busy for too long, a full disk) is `StoreUnavailable`."""
        try:
            with self._file.transaction() as db:
                yield db
        except sqlite3.Error as exc:
            raise StoreUnavailable(
                f"sandbox: the kept-state store {self.path} did not answer ({exc}). Another process may hold "
                "it for too long, or the disk is full; retry the request, and check the server's disk."
            ) from None

    def _counter(self, db: sqlite3.Connection, name: str) -> int:
        value: int = db.execute("SELECT value FROM counters WHERE name = ?", (name,)).fetchone()[0]
        return value

    def _add(self, db: sqlite3.Connection, name: str, amount: int) -> int:
        """Add `amount` to the counter `name`; its new value."""
        value: int = db.execute(
            "UPDATE counters SET value = value + ? WHERE name = ? RETURNING value", (amount, name)
        ).fetchone()[0]
        return value

    def __len__(self) -> int:
        with self._tx() as db:
            return self._counter(db, "count")

    @property
    def held(self) -> int:
        with self._tx() as db:
            return self._counter(db, "bytes")

    @property
    def evictions(self) -> int:
        with self._tx() as db:
            return self._counter(db, "evictions")

    def numbers(self) -> Iterator[int]:
        def reserve(block: int) -> int:
            with self._tx() as db:
                return self._add(db, "answers", block) - block

        return Blocks(reserve)

    def was_evicted(self, key: str) -> bool:
        with self._tx() as db:
            return db.execute("SELECT 1 FROM evicted WHERE key = ?", (key,)).fetchone() is not None

    def get(self, key: str) -> Entry | None:
        with self._tx() as db:
            row = db.execute(
                "SELECT items, parent, fields, owner, size, prefix, continued, in_flight FROM entries WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        items, parent, fields, owner, size, prefix, continued, in_flight = row
        prefixes = (prefix,) if prefix else ()
        return Entry(items, parent, fields, owner, size, (), prefixes, bool(continued), bool(in_flight))

    def view(self, key: str, owner: str) -> tuple[bytes, tuple[bytes, ...], int, object] | None:
        entry = self.get(key)
        if entry is None or entry.owner != owner:
            return None
        return entry.items, (), entry.size - len(entry.fields) - ENTRY_OVERHEAD, None

    def claim(self, key: str, owner: str, *, once: bool) -> Claim | str:
        with self._tx() as db:
            row = db.execute("SELECT owner, fields, continued, in_flight FROM entries WHERE key = ?", (key,)).fetchone()
            if row is None or row[0] != owner:
                return "evicted" if db.execute("SELECT 1 FROM evicted WHERE key = ?", (key,)).fetchone() else "missing"
            _, fields, continued, in_flight = row
            if once and continued:
                return "continued"
            now = time.time()
            if once and now - in_flight < HOLD_SECONDS:  # 0: not held
                return "in_flight"
            chain = db.execute(_CHAIN, (key,)).fetchall()
            if chain[0][1] is not None:  # the oldest found still names a parent: a link is gone
                return "broken"
            for link in reversed(chain):  # the whole chain is recently used, its start the most
                db.execute("UPDATE entries SET used = ? WHERE key = ?", (self._add(db, "used", 1), link[0]))
            if once:
                db.execute("UPDATE entries SET in_flight = ? WHERE key = ?", (now, key))
            history = (chain[0][3], *(link[2] for link in chain))
            return Claim(key, history, fields, None, tuple(link[0] for link in chain))

    def release(self, claim: Claim) -> None:
        with self._tx() as db:
            db.execute("UPDATE entries SET in_flight = 0 WHERE key = ?", (claim.key,))

    def put(self, key: str, entry: Entry, continued: Claim | None, *, once: bool) -> None:
        with self._tx() as db:
            if continued is not None:
                db.execute(
                    "UPDATE entries SET in_flight = 0, continued = continued OR ? WHERE key = ?", (once, continued.key)
                )
            self._delete(db, key)
            if entry.size > self.max_bytes:
                self._forget(db, key)
                return
            db.execute(
                "INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, ?)",
                (
                    key,
                    entry.parent,
                    entry.owner,
                    b",".join(part for part in entry.parts if part),
                    entry.fields,
                    b",".join(part for part in entry.prefix if part),
                    entry.size,
                    self._add(db, "used", 1),
                ),
            )
            self._add(db, "count", 1)
            self._add(db, "bytes", entry.size)
            self._make_room(db)

    def update(
        self,
        key: str,
        owner: str,
        *,
        items: bytes | None = None,
        append: bytes = b"",
        fields: bytes | None = None,
        snapshot: object = None,
        snapshot_size: int = 0,
        read: tuple[bytes, tuple[bytes, ...]] | None = None,
    ) -> bool:
        with self._tx() as db:
            row = db.execute("SELECT owner, items, fields, size FROM entries WHERE key = ?", (key,)).fetchone()
            if row is None or row[0] != owner:
                return False
            _, held, old_fields, old_size = row
            kept = old_size - len(old_fields) - ENTRY_OVERHEAD
            if items is not None:
                held, kept = items, len(items)
            if append:
                held, kept = (held + b"," + append if held else append), kept + len(append)
            new_fields = old_fields if fields is None else fields
            size = kept + len(new_fields) + ENTRY_OVERHEAD
            db.execute(
                "UPDATE entries SET items = ?, fields = ?, size = ?, used = ? WHERE key = ?",
                (held, new_fields, size, self._add(db, "used", 1), key),
            )
            self._add(db, "bytes", size - old_size)
            if size > self.max_bytes:
                self._delete(db, key)
                self._forget(db, key)
                return True
            self._make_room(db)
            return True

    def remove(self, key: str, owner: str) -> bool:
        with self._tx() as db:
            row = db.execute("SELECT owner FROM entries WHERE key = ?", (key,)).fetchone()
            if row is None or row[0] != owner:
                return False
            self._delete(db, key)
            return True

    def _delete(self, db: sqlite3.Connection, key: str) -> None:
        row = db.execute("DELETE FROM entries WHERE key = ? RETURNING size", (key,)).fetchone()
        if row is not None:
            self._add(db, "count", -1)
            self._add(db, "bytes", -row[0])

    def _make_room(self, db: sqlite3.Connection) -> None:
        while self._counter(db, "count") > self.max_entries or self._counter(db, "bytes") > self.max_bytes:
            (oldest,) = db.execute("SELECT key FROM entries ORDER BY used LIMIT 1").fetchone()
            self._delete(db, oldest)
            self._forget(db, oldest)

    def _forget(self, db: sqlite3.Connection, key: str) -> None:
        seq = self._add(db, "evictions", 1)
        db.execute("INSERT OR REPLACE INTO evicted VALUES (?, ?)", (key, seq))
        db.execute("DELETE FROM evicted WHERE seq <= ?", (seq - REMEMBER_EVICTED,))
