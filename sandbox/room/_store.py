"""The room's durable record: one SQLite file (stdlib `sqlite3`, WAL), so a restarted room keeps its
learners and several worker processes share one room.

May touch: the database file it is given, and nothing else. Holds no logic about what a run means
(see `_model`): it stores learners (their token and API key as SHA-256 digests, never the secrets
themselves), each learner's progress as of their last run, their verified results (the
instructor's own grading) (one row each, rewritten per run, so the file stays small however long
the workshop), each conversation the room's server saw (the newest few per learner), the room's
settings (its instructor key, so the page's URL survives a restart of the same `--room-db`, and its
roster), and the room's rate limits.

Every change is one writing transaction (`WalFile.transaction`), atomic among all the processes that
open the file: a change that depends on what is stored (a run's streak, a name's uniqueness, which
conversation a request continues) reads and writes in the same transaction. Each change of a
learner stamps their row, and each conversation its own row, with the next value of one counter,
so a process's view (`RoomService`) reloads only what changed since it last looked (`load`);
`version` says when anything did. The room calls the store from worker threads (`asyncio.to_thread`)
so that a slow disk never stalls the event loop the sandbox answers on.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engine.kept._wal import BUSY_SECONDS, WalFile
from ._model import MAX_CONVERSATIONS
from ._names import name_key

__all__ = ["Loaded", "LearnerRecord", "RoomDatabase", "digest"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT OR IGNORE INTO meta (key, value) VALUES ('seq', '0');
CREATE TABLE IF NOT EXISTS learners (
    name TEXT PRIMARY KEY,
    token TEXT NOT NULL UNIQUE,
    api_key TEXT NOT NULL UNIQUE,
    joined REAL NOT NULL,
    expires REAL NOT NULL,
    seq INTEGER NOT NULL DEFAULT 0
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
    seq INTEGER NOT NULL DEFAULT 0,
    thread TEXT NOT NULL DEFAULT '',
    turns INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (learner, id)
);
CREATE TABLE IF NOT EXISTS limits (key TEXT PRIMARY KEY, tokens REAL NOT NULL, stamp REAL NOT NULL);
CREATE INDEX IF NOT EXISTS limits_stamp ON limits (stamp);
"""
_ADDED = (
    ("learners", "seq", "INTEGER NOT NULL DEFAULT 0"),
    ("conversations", "seq", "INTEGER NOT NULL DEFAULT 0"),
    ("conversations", "thread", "TEXT NOT NULL DEFAULT ''"),
    ("conversations", "turns", "INTEGER NOT NULL DEFAULT 0"),
)
"""Columns a room file written by an earlier version lacks, added when it is opened."""


def digest(secret: str) -> str:
    """What the store keeps of a token or an API key: enough to recognise it, not to use it."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class LearnerRecord:
    name: str
    joined: float
    expires: float


@dataclass
class Loaded:
    """What changed in the file since a view's stamps (see `RoomDatabase.load`)."""

    settings: dict[str, str]
    learners: dict[str, tuple[float, int]]
    """Every learner: name -> (joined, stamp)."""
    progress: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    """For each learner whose stamp moved: their progress (None: no run yet)."""
    verified: dict[str, dict[str, Any]] = field(default_factory=dict)
    conversations: dict[str, list[tuple[str, int, dict[str, Any] | None]]] = field(default_factory=dict)
    """For each learner whose stamp moved: their conversations, oldest first, as (id, stamp, body);
    the body is None when the view already holds that id at that stamp."""


class RoomDatabase:
    """The room's SQLite file. Open it once per process; every method is thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = WalFile(str(path))
        self._file.db.executescript(f"BEGIN IMMEDIATE; {_SCHEMA} COMMIT;")
        with self._file.transaction() as db:
            for table, column, kind in _ADDED:
                if column not in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
        self._watch = sqlite3.connect(str(path), timeout=BUSY_SECONDS, check_same_thread=False)
        """A second connection, only for `version`: it sees every commit, this process's own too."""
        self._watch_lock = threading.Lock()

    def close(self) -> None:
        self._file.close()
        with self._watch_lock:
            self._watch.close()

    def version(self) -> int:
        """A number that moves whenever anyone (any process) commits a change to the file."""
        with self._watch_lock:
            value: int = self._watch.execute("PRAGMA data_version").fetchone()[0]
        return value

    # -- the room's own settings ------------------------------------------------------------------

    def setting(self, key: str, default: str) -> str:
        """The stored value of `key`, storing `default` first when there is none."""
        with self._file.transaction() as db:
            db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, default))
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return str(row[0])

    def put_setting(self, key: str, value: str) -> None:
        with self._file.transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
            _next(db)

    # -- learners ---------------------------------------------------------------------------------

    def add_learner(self, name: str, token: str, api_key: str, joined: float, expires: float) -> bool:
        """Record a new learner; False when the name, or one that differs only in case, accents or
        look-alike letters (`name_key`), is taken."""
        with self._file.transaction() as db:
            if _holder(db, name) is not None:
                return False
            db.execute(
                "INSERT INTO learners (name, token, api_key, joined, expires, seq) VALUES (?, ?, ?, ?, ?, ?)",
                (name, digest(token), digest(api_key), joined, expires, _next(db)),
            )
        return True

    def renew_learner(self, name: str, old_token: str, token: str, api_key: str, expires: float) -> bool:
        """Give `name` a fresh token and API key, if `old_token` (even an expired one) is theirs."""
        with self._file.transaction() as db:
            cursor = db.execute(
                "UPDATE learners SET token = ?, api_key = ?, expires = ? WHERE name = ? AND token = ?",
                (digest(token), digest(api_key), expires, name, digest(old_token)),
            )
        return cursor.rowcount == 1

    def remove_learner(self, name: str) -> bool:
        """Forget a learner entirely (the instructor frees a name): their runs and conversations too."""
        with self._file.transaction() as db:
            cursor = db.execute("DELETE FROM learners WHERE name = ?", (name,))
            db.execute("DELETE FROM progress WHERE learner = ?", (name,))
            db.execute("DELETE FROM verified WHERE learner = ?", (name,))
            db.execute("DELETE FROM conversations WHERE learner = ?", (name,))
            _next(db)
        return cursor.rowcount == 1

    def rename_learner(self, old: str, new: str) -> str | None:
        """`old` is known as `new` from now on: the same token, API key, runs and conversations. The
        learner already holding `new` (in any spelling, see `add_learner`), if another one does, and
        then nothing changes."""
        with self._file.transaction() as db:
            holder = _holder(db, new)
            if holder is not None and holder != old:
                return holder
            db.execute("UPDATE learners SET name = ?, seq = ? WHERE name = ?", (new, _next(db), old))
            db.execute("UPDATE progress SET learner = ? WHERE learner = ?", (new, old))
            db.execute("UPDATE verified SET learner = ? WHERE learner = ?", (new, old))
            db.execute("UPDATE conversations SET learner = ? WHERE learner = ?", (new, old))
        return None

    def merge_learners(
        self,
        source: str,
        into: str,
        change: Callable[[dict[str, Any] | None, dict[str, Any] | None], dict[str, Any]],
    ) -> bool:
        """`source` folded into `into`, in one transaction: `into` gets `change(source's progress,
        into's progress)`, the earlier join, and the newest `MAX_CONVERSATIONS` of both's
        conversations; `source` is gone. False (and nothing changed) unless both are learners."""
        with self._file.transaction() as db:
            joined = [row[0] for row in db.execute("SELECT joined FROM learners WHERE name IN (?, ?)", (source, into))]
            if source == into or len(joined) != 2:
                return False
            stored = dict(db.execute("SELECT learner, body FROM progress WHERE learner IN (?, ?)", (source, into)))
            progress = change(*(json.loads(stored[name]) if name in stored else None for name in (source, into)))
            seq = _next(db)
            db.execute("UPDATE OR IGNORE conversations SET learner = ?, seq = ? WHERE learner = ?", (into, seq, source))
            db.execute(
                "DELETE FROM conversations WHERE learner = ? OR (learner = ? AND id NOT IN "
                "(SELECT id FROM conversations WHERE learner = ? ORDER BY updated DESC LIMIT ?))",
                (source, into, into, MAX_CONVERSATIONS),
            )
            db.execute("DELETE FROM learners WHERE name = ?", (source,))
            db.execute("DELETE FROM progress WHERE learner = ?", (source,))
            db.execute("DELETE FROM verified WHERE learner = ?", (source,))
            db.execute("INSERT OR REPLACE INTO progress (learner, body) VALUES (?, ?)", (into, _dumps(progress)))
            db.execute("UPDATE learners SET seq = ?, joined = ? WHERE name = ?", (seq, min(joined), into))
        return True

    def by_token(self, token: str) -> LearnerRecord | None:
        return self._learner("token", token)

    def by_api_key(self, api_key: str) -> LearnerRecord | None:
        return self._learner("api_key", api_key)

    def _learner(self, column: str, secret: str) -> LearnerRecord | None:
        with self._file.transaction(write=False) as db:
            row = db.execute(
                f"SELECT name, joined, expires FROM learners WHERE {column} = ?",  # noqa: S608 - a fixed column
                (digest(secret),),
            ).fetchone()
        return LearnerRecord(str(row[0]), float(row[1]), float(row[2])) if row else None

    def learners(self) -> list[LearnerRecord]:
        with self._file.transaction(write=False) as db:
            rows = db.execute("SELECT name, joined, expires FROM learners ORDER BY joined").fetchall()
        return [LearnerRecord(str(name), float(joined), float(expires)) for name, joined, expires in rows]

    # -- what learners sent -----------------------------------------------------------------------

    def update_progress(self, learner: str, change: Callable[[dict[str, Any] | None], dict[str, Any]]) -> int | None:
        """`learner`'s progress replaced by `change(progress as stored)`, in one transaction, so two
        runs posted at once through two processes both count: the change's stamp (the page's
        `version` that first shows it), or None when there is no such learner."""
        return self._update("progress", learner, change)

    def update_verified(self, learner: str, change: Callable[[dict[str, Any] | None], dict[str, Any]]) -> int | None:
        """The instructor's own grading of `learner`, per challenge (see `RoomService.verify`), as `update_progress`."""
        return self._update("verified", learner, change)

    def _update(
        self, table: str, learner: str, change: Callable[[dict[str, Any] | None], dict[str, Any]]
    ) -> int | None:
        with self._file.transaction() as db:
            stamp = _next(db)
            if db.execute("UPDATE learners SET seq = ? WHERE name = ?", (stamp, learner)).rowcount != 1:
                return None
            row = db.execute(f"SELECT body FROM {table} WHERE learner = ?", (learner,)).fetchone()  # noqa: S608
            body = change(json.loads(row[0]) if row is not None else None)
            db.execute(f"INSERT OR REPLACE INTO {table} (learner, body) VALUES (?, ?)", (learner, _dumps(body)))  # noqa: S608
        return stamp

    def record_chat(self, api_key: str, thread: str, turns: int, at: float, chat: dict[str, Any]) -> str | None:
        """Keep `chat` (of a request answered at `at`) under the learner whose API key this is: as
        their latest conversation of this `thread` (a digest of provider, model and first turn) when
        that held fewer than `turns` turns (the loop went on), else as a new one (it ran again), the
        oldest dropped past `MAX_CONVERSATIONS`; `requests` counts the requests of each. A request
        recorded after a later one of its conversation (two workers record in either order) only
        counts. The learner's name, or None when no learner holds the key."""
        with self._file.transaction() as db:
            row = db.execute("SELECT name FROM learners WHERE api_key = ?", (digest(api_key),)).fetchone()
            if row is None:
                return None
            learner, seq = str(row[0]), _next(db)
            found = db.execute(
                "SELECT id, turns, body, updated FROM conversations WHERE learner = ? AND thread = ? "
                "ORDER BY updated DESC",
                (learner, thread),
            ).fetchone()
            key, requests = f"{int(at * 1000):x}-{seq}", 1
            if found is not None and (found[1] < turns or found[3] > at):
                kept = json.loads(found[2])
                key, requests = str(found[0]), int(kept.get("requests", 0)) + 1
                if found[3] > at:  # the kept chat is of a later request: it stays
                    chat, at, turns = kept, float(found[3]), int(found[1])
            db.execute(
                "INSERT INTO conversations (learner, id, updated, body, seq, thread, turns) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (learner, id) DO UPDATE SET updated = excluded.updated, body = excluded.body, "
                "seq = excluded.seq, turns = excluded.turns",
                (learner, key, at, _dumps({**chat, "requests": requests}), seq, thread, turns),
            )
            db.execute(
                "DELETE FROM conversations WHERE learner = ? AND id NOT IN "
                "(SELECT id FROM conversations WHERE learner = ? ORDER BY updated DESC LIMIT ?)",
                (learner, learner, MAX_CONVERSATIONS),
            )
            db.execute("UPDATE learners SET seq = ? WHERE name = ?", (seq, learner))
        return learner

    # -- what a process's view reloads ------------------------------------------------------------

    def load(self, stamps: Mapping[str, int], held: Mapping[str, Mapping[str, int]]) -> Loaded:
        """The file as of now, for a view that holds each learner as of `stamps` (name -> stamp) and
        their conversations as of `held` (name -> id -> stamp): the settings, every learner's name,
        join time and stamp, and for those whose stamp moved, their progress, verified results and
        conversations (a body only where the view's is not current). One reading transaction: one
        moment of the file, whatever other processes write meanwhile."""
        with self._file.transaction(write=False) as db:
            settings = {str(key): str(value) for key, value in db.execute("SELECT key, value FROM meta")}
            rows = db.execute("SELECT name, joined, seq FROM learners ORDER BY joined").fetchall()
            loaded = Loaded(settings, {str(name): (float(joined), int(seq)) for name, joined, seq in rows})
            for name, (_, seq) in loaded.learners.items():
                if stamps.get(name) == seq:
                    continue
                row = db.execute("SELECT body FROM progress WHERE learner = ?", (name,)).fetchone()
                loaded.progress[name] = json.loads(row[0]) if row is not None else None
                row = db.execute("SELECT body FROM verified WHERE learner = ?", (name,)).fetchone()
                loaded.verified[name] = json.loads(row[0]) if row is not None else {}
                have = held.get(name, {})
                chats = loaded.conversations[name] = []
                for key, stamp in db.execute(
                    "SELECT id, seq FROM conversations WHERE learner = ? ORDER BY updated", (name,)
                ).fetchall():
                    body = None
                    if have.get(key) != stamp:
                        (text,) = db.execute(
                            "SELECT body FROM conversations WHERE learner = ? AND id = ?", (name, key)
                        ).fetchone()
                        body = json.loads(text)
                    chats.append((str(key), int(stamp), body))
        return loaded

    # -- the room's bounds ------------------------------------------------------------------------

    def take(self, key: str, rate: float, burst: float) -> float:
        """One post from the bucket `key` (a learner, a client address) that refills at `rate` a second
        up to `burst`: 0 when it may go ahead now, else the seconds until one may. Shared by every
        process, so N workers hold a sender to one rate, not N; buckets that have refilled are forgotten."""
        now = time.time()
        with self._file.transaction() as db:
            row = db.execute("SELECT tokens, stamp FROM limits WHERE key = ?", (key,)).fetchone()
            tokens = burst if row is None else min(burst, row[0] + max(0.0, now - row[1]) * rate)
            wait = 0.0 if tokens >= 1 else (1 - tokens) / rate
            db.execute("INSERT OR REPLACE INTO limits VALUES (?, ?, ?)", (key, tokens - 1 if not wait else tokens, now))
            db.execute("DELETE FROM limits WHERE stamp < ?", (now - burst / rate,))
        return wait


def _holder(db: sqlite3.Connection, name: str) -> str | None:
    """The learner whose name is `name` in some spelling (`name_key`), if any."""
    key = name_key(name)
    return next((str(row[0]) for row in db.execute("SELECT name FROM learners") if name_key(str(row[0])) == key), None)


def _next(db: sqlite3.Connection) -> int:
    """The next value of the file's one counter: each change's stamp."""
    (value,) = db.execute("UPDATE meta SET value = value + 1 WHERE key = 'seq' RETURNING value").fetchone()
    return int(value)


def _dumps(body: dict[str, Any]) -> str:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))
