"""The room's durable record: one SQLite file (stdlib `sqlite3`), so a restarted room keeps its learners.

May touch: the database file it is given, and nothing else. Holds no logic about what a run means
(see `_model`): it stores learners (their token and API key as SHA-256 digests, never the secrets
themselves), each learner's progress as of their last run, their verified results (the
instructor's own grading) (one row each, rewritten per run, so
the file stays small however long the workshop), each conversation the room's server saw (the
newest few per learner), and the room's instructor key (so the page's URL survives a restart of
the same `--room-db`).

Every method takes the one lock: the room calls the store from worker threads (`asyncio.to_thread`)
so that a slow disk never stalls the event loop the sandbox answers on.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["LearnerRecord", "RoomDatabase", "digest"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS learners (
    name TEXT PRIMARY KEY,
    token TEXT NOT NULL UNIQUE,
    api_key TEXT NOT NULL UNIQUE,
    joined REAL NOT NULL,
    expires REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS progress (
    learner TEXT PRIMARY KEY,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS verified (
    learner TEXT PRIMARY KEY,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS conversations (
    learner TEXT NOT NULL,
    id TEXT NOT NULL,
    updated REAL NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (learner, id)
);
"""


def digest(secret: str) -> str:
    """What the store keeps of a token or an API key: enough to recognise it, not to use it."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class LearnerRecord:
    name: str
    joined: float
    expires: float


class RoomDatabase:
    """The room's SQLite file. Open it once per room; every method is thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- the room's own settings ------------------------------------------------------------------

    def setting(self, key: str, default: str) -> str:
        """The stored value of `key`, storing `default` first when there is none."""
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, default))
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0])

    def put_setting(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """The lock, and one transaction: every statement in the block lands, or none does."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # -- learners ---------------------------------------------------------------------------------

    def add_learner(self, name: str, token: str, api_key: str, joined: float, expires: float) -> bool:
        """Record a new learner; False when the name is taken."""
        with self._lock:
            try:
                self._db.execute(
                    "INSERT INTO learners (name, token, api_key, joined, expires) VALUES (?, ?, ?, ?, ?)",
                    (name, digest(token), digest(api_key), joined, expires),
                )
            except sqlite3.IntegrityError:
                return False
        return True

    def renew_learner(self, name: str, old_token: str, token: str, api_key: str, expires: float) -> bool:
        """Give `name` a fresh token and API key, if `old_token` (even an expired one) is theirs."""
        with self._lock:
            cursor = self._db.execute(
                "UPDATE learners SET token = ?, api_key = ?, expires = ? WHERE name = ? AND token = ?",
                (digest(token), digest(api_key), expires, name, digest(old_token)),
            )
        return cursor.rowcount == 1

    def remove_learner(self, name: str) -> bool:
        """Forget a learner entirely (the instructor frees a name): their runs and conversations too."""
        with self._transaction() as db:
            cursor = db.execute("DELETE FROM learners WHERE name = ?", (name,))
            db.execute("DELETE FROM progress WHERE learner = ?", (name,))
            db.execute("DELETE FROM verified WHERE learner = ?", (name,))
            db.execute("DELETE FROM conversations WHERE learner = ?", (name,))
        return cursor.rowcount == 1

    def rename_learner(self, old: str, new: str) -> None:
        """`old` is known as `new` from now on: the same token, API key, runs and conversations."""
        with self._transaction() as db:
            db.execute("UPDATE learners SET name = ? WHERE name = ?", (new, old))
            db.execute("UPDATE progress SET learner = ? WHERE learner = ?", (new, old))
            db.execute("UPDATE verified SET learner = ? WHERE learner = ?", (new, old))
            db.execute("UPDATE conversations SET learner = ? WHERE learner = ?", (new, old))

    def merge_learners(self, source: str, into: str, progress: dict[str, Any], kept: list[str]) -> None:
        """`source` folded into `into`: `into` gets `progress` and the conversations keyed `kept` of
        both; `source` is gone."""
        with self._transaction() as db:
            db.execute("UPDATE conversations SET learner = ? WHERE learner = ?", (into, source))
            marks = ",".join("?" * len(kept))
            db.execute(f"DELETE FROM conversations WHERE learner = ? AND id NOT IN ({marks})", (into, *kept))  # noqa: S608
            db.execute("DELETE FROM learners WHERE name = ?", (source,))
            db.execute("DELETE FROM progress WHERE learner = ?", (source,))
            db.execute("DELETE FROM verified WHERE learner = ?", (source,))
            db.execute("INSERT OR REPLACE INTO progress (learner, body) VALUES (?, ?)", (into, _dumps(progress)))

    def by_token(self, token: str) -> LearnerRecord | None:
        return self._learner("token", token)

    def by_api_key(self, api_key: str) -> LearnerRecord | None:
        return self._learner("api_key", api_key)

    def _learner(self, column: str, secret: str) -> LearnerRecord | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT name, joined, expires FROM learners WHERE {column} = ?",  # noqa: S608 - a fixed column
                (digest(secret),),
            ).fetchone()
        return LearnerRecord(str(row[0]), float(row[1]), float(row[2])) if row else None

    def learners(self) -> list[LearnerRecord]:
        with self._lock:
            rows = self._db.execute("SELECT name, joined, expires FROM learners ORDER BY joined").fetchall()
        return [LearnerRecord(str(name), float(joined), float(expires)) for name, joined, expires in rows]

    # -- what learners sent -----------------------------------------------------------------------

    def put_progress(self, learner: str, body: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO progress (learner, body) VALUES (?, ?)", (learner, _dumps(body)))

    def progress(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Each learner's progress as of their last run: what the room restores at start-up."""
        with self._lock:
            rows = self._db.execute("SELECT learner, body FROM progress").fetchall()
        for learner, body in rows:
            yield str(learner), json.loads(body)

    def put_verified(self, learner: str, body: dict[str, Any]) -> None:
        """The instructor's own grading of `learner`, per challenge (see `RoomService.verify`)."""
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO verified (learner, body) VALUES (?, ?)", (learner, _dumps(body)))

    def verified(self) -> Iterator[tuple[str, dict[str, Any]]]:
        with self._lock:
            rows = self._db.execute("SELECT learner, body FROM verified").fetchall()
        for learner, body in rows:
            yield str(learner), json.loads(body)

    def put_conversation(self, learner: str, key: str, updated: float, body: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO conversations (learner, id, updated, body) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (learner, id) DO UPDATE SET updated = excluded.updated, body = excluded.body",
                (learner, key, updated, _dumps(body)),
            )

    def drop_conversation(self, learner: str, key: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM conversations WHERE learner = ? AND id = ?", (learner, key))

    def conversations(self) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """Every kept conversation, oldest first."""
        with self._lock:
            rows = self._db.execute("SELECT learner, id, body FROM conversations ORDER BY updated").fetchall()
        for learner, key, body in rows:
            yield str(learner), str(key), json.loads(body)


def _dumps(body: dict[str, Any]) -> str:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))
