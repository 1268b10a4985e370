"""The room's operations: join, post a run, record a learner's exchange, manage learners, and the
page's live stream.

May touch: its `RoomDatabase` (SQLite, always from a worker thread so a slow disk never stalls the event
loop the sandbox answers on) and its in-memory `Room`. Owned by the server's event loop: every
method runs there, except the store calls it hands to threads. Every change is written to the store
first and applied to the `Room` only once written, so a failed write (answered 503) changes nothing.
The page's live stream is `Live`'s (see `_live`): the service renders the fragments and says when
the room changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import sqlite3
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ..engine._engine import Engine, Exchange
from ..grading.programs._program_cases import CASES
from . import _page
from ._convo import LearnerChats
from ._guard import new_secret
from ._live import Live
from ._model import Room, RoomInputError, parse_run, status_of
from ._names import MAX_NAME, clean_name, name_key, name_problem
from ._store import RoomDatabase

T = TypeVar("T")

__all__ = ["SINK", "Joined", "RecordingEngine", "RoomError", "RoomService"]

SINK: contextvars.ContextVar[list[Exchange]] = contextvars.ContextVar("sandbox_room_sink")
"""Where the engine leaves the exchanges of the request being served for a known learner: set by
`RoomApp` around the sandbox's app, read back once the answer is sent (worker threads share it,
as `asyncio.to_thread` copies the context)."""

TOKEN_HOURS = 24.0
"""How long a learner's token lasts: a workshop day. A later run joins again with the old token."""


class RoomError(Exception):
    """An HTTP error the room answers with: status, a stable code, and a sentence saying what to do."""

    def __init__(self, status: int, code: str, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


@dataclass(frozen=True)
class Joined:
    name: str
    token: str
    api_key: str
    expires: float


class RecordingEngine(Engine):
    """The sandbox's engine, also handing each exchange to the request's room sink (see `RoomApp`)."""

    def handle(self, *args: Any, **kwargs: Any) -> Exchange:
        exchange = super().handle(*args, **kwargs)
        sink = SINK.get(None)
        if sink is not None:
            sink.append(exchange)
        return exchange


def package_catalogue() -> dict[str, str]:
    """The challenges the package grades, by name (no titles: those live in a checkout's hints.toml)."""
    return {name: "" for name in sorted(CASES)}


class RoomService:
    def __init__(
        self,
        store: RoomDatabase,
        *,
        titles: Mapping[str, str] | None = None,
        stuck_runs: int = 3,
        stuck_minutes: float = 10.0,
        min_interval: float = 0.25,
        heartbeat: float = 5.0,
        token_hours: float = TOKEN_HOURS,
    ) -> None:
        self.store = store
        self.key = store.setting("instructor_key", new_secret("room-"))
        self.room = Room(titles=titles or package_catalogue(), stuck_runs=stuck_runs, stuck_minutes=stuck_minutes)
        roster = json.loads(store.setting("roster", "[]"))
        self.room.roster = {name_key(name): name for name in roster}
        self.conversations = LearnerChats()
        self.live = Live(self.fragments, min_interval=min_interval, heartbeat=heartbeat)
        self.token_seconds = token_hours * 3600
        self._joining: set[str] = set()
        """Name keys of joins under way: two spellings of one name never both get in."""
        self._keys: dict[str, str] = {}
        """API key -> learner, for the keys seen since start-up (the store knows only their digests)."""
        for record in store.learners():
            self.room.join(record.name, record.joined)
        for learner, progress in store.progress():
            self.room.restore(learner, progress)
        for learner, verified in store.verified():
            if learner in self.room.learners:
                self.room.learners[learner].verified = verified
        for learner, key, conversation in store.conversations():
            self.room.put_conversation(learner, key, conversation)

    @property
    def closing(self) -> bool:
        """Set as the server shuts down: open streams end, the broadcaster stops."""
        return self.live.closing

    @closing.setter
    def closing(self, value: bool) -> None:
        self.live.closing = value

    # -- learners ---------------------------------------------------------------------------------

    async def _saved(self, write: Callable[..., T], *args: Any) -> T:
        """`write(*args)` on the store in a worker thread; a failure is a 503 that changed nothing."""
        try:
            return await asyncio.to_thread(write, *args)
        except (sqlite3.Error, OSError, ValueError) as error:
            print(f"room: the store could not save ({error}); nothing changed.", file=sys.stderr)
            raise RoomError(
                503, "not_saved", "The room could not save this and changed nothing: try again in a moment."
            ) from None

    async def join(self, given: object, old_token: object = None, old_api_key: object = None) -> Joined:
        """A new learner, or (with the token a join gave them, even expired) the same learner again,
        keeping the API key their own loop already uses when they send it back. With a roster, only
        its names join, under the roster's spelling."""
        cleaned = clean_name(given)
        if cleaned is None:
            problem = name_problem(" ".join(given.split())) if isinstance(given, str) else None
            raise RoomError(
                400,
                "bad_name",
                f"name={str(given)[:60]!r}: {problem or 'a name is a string'}; use 1 to {MAX_NAME} visible "
                "characters (your name as the instructor knows it), e.g. --name 'Ada Lovelace'.",
            )
        key = name_key(cleaned)
        if self.room.roster and key not in self.room.roster:
            raise RoomError(
                403,
                "not_on_roster",
                f"{cleaned!r} is not on this room's roster: join with your name as the instructor listed it, "
                "or ask the instructor to add you.",
            )
        name = self.room.roster.get(key, cleaned)
        holder = self.room.holder(key)
        now = time.time()
        token, api_key = new_secret("rt-"), new_secret("sk-room-")
        expires = now + self.token_seconds
        if holder is not None and isinstance(old_token, str) and old_token:
            if isinstance(old_api_key, str) and old_api_key:
                owner = await asyncio.to_thread(self.store.by_api_key, old_api_key)
                api_key = old_api_key if owner is not None and owner.name == holder else api_key
            if await self._saved(self.store.renew_learner, holder, old_token, token, api_key, expires):
                self._forget_keys(holder)
                self._keys[api_key] = holder
                return Joined(holder, token, api_key, expires)
        if holder is not None or key in self._joining:
            shown = f" (as {holder!r})" if holder is not None and holder != name else ""
            raise RoomError(
                409,
                "name_taken",
                f"{name!r} has already joined this room{shown} from another machine. Join with another --name "
                "(add an initial), or ask the instructor to free the name.",
            )
        self._joining.add(key)
        try:
            if not await self._saved(self.store.add_learner, name, token, api_key, now, expires):
                raise RoomError(409, "name_taken", f"{name!r} has already joined this room from another machine.")
        finally:
            self._joining.discard(key)
        self._keys[api_key] = name
        self.room.join(name, now)
        self._touch()
        return Joined(name, token, api_key, expires)

    async def learner_for_token(self, token: str | None) -> str:
        if not token:
            raise RoomError(
                401,
                "no_token",
                "This needs your room token (Authorization: Bearer ...): join first with --room URL --name NAME.",
            )
        if token == self.key:
            raise RoomError(
                403, "instructor_key", "That is the instructor's key: learners post with the token their join returned."
            )
        record = await asyncio.to_thread(self.store.by_token, token)
        if record is None:
            raise RoomError(
                401,
                "unknown_token",
                "This room does not know that token (the room was started afresh, or the instructor freed your "
                "name). Run again with --room URL --name NAME to join.",
            )
        if record.expires < time.time():
            raise RoomError(
                401,
                "expired_token",
                "Your room token has expired. Run again with --room URL --name NAME to join again.",
            )
        return record.name

    async def is_learner_token(self, token: str) -> bool:
        return await asyncio.to_thread(self.store.by_token, token) is not None

    async def post_run(self, name: str, data: object) -> None:
        try:
            run = parse_run(data, self.room.titles)
        except RoomInputError as error:
            raise RoomError(400, "bad_run", f"the room cannot read this run: {error}") from None
        learner = self.room.after_run(name, time.time(), run)
        await self._saved(self.store.put_progress, name, self.room.progress(learner))
        self.room.replace(learner)
        self._touch()

    # -- the instructor's hand --------------------------------------------------------------------

    def _known(self, name: str) -> str:
        if name not in self.room.learners:
            raise RoomError(404, "no_learner", f"No learner named {name[:60]!r} in this room.")
        return name

    async def remove(self, name: str) -> bool:
        removed = await self._saved(self.store.remove_learner, name)
        self._forget_keys(name)
        self.room.leave(name)
        self._touch()
        return removed

    async def rename(self, old: str, given: object) -> str:
        """`old` is called `given` from now on; their grader and loop keep working with what they hold."""
        self._known(old)
        new = clean_name(given)
        if new is None:
            raise RoomError(400, "bad_name", f"name={str(given)[:60]!r}: use 1 to {MAX_NAME} visible characters.")
        holder = self.room.holder(name_key(new))
        if holder is not None and holder != old:
            raise RoomError(409, "name_taken", f"{new!r} is {holder!r}'s name already: merge them instead.")
        await self._saved(self.store.rename_learner, old, new)
        self._forget_keys(old)
        self.room.rename(old, self.room.renamed(old, new))
        self._touch()
        return new

    async def merge(self, source: str, into: str) -> None:
        """One learner who joined twice: `source`'s runs and conversations go to `into`, `source` is gone."""
        self._known(source)
        self._known(into)
        if source == into:
            raise RoomError(400, "same_learner", "Merge a learner into another one, not into themselves.")
        merged = self.room.merged(source, into)
        kept = list(merged.conversations)
        await self._saved(self.store.merge_learners, source, into, self.room.progress(merged), kept)
        self._forget_keys(source)
        self.room.leave(source)
        self.room.replace(merged)
        self._touch()

    async def verify(self, name: str, data: object) -> dict[str, Any]:
        """Record the instructor's own grading of `name` (a run, as a grader posts it) as verified."""
        learner = self.room.learners[self._known(name)]
        try:
            run = parse_run(data, self.room.titles)
        except RoomInputError as error:
            raise RoomError(400, "bad_run", f"the room cannot read these results: {error}") from None
        now = time.time()
        verified = dict(learner.verified)
        for challenge, counts in run["challenges"].items():
            status = status_of(counts["passed"], counts["failed"], counts["not_started"], counts["collected"])
            verified[challenge] = {
                "status": status,
                "passed": counts["passed"],
                "total": counts["collected"],
                "at": now,
            }
        await self._saved(self.store.put_verified, name, verified)
        learner.verified = verified
        self.room.version += 1
        self._touch()
        return verified

    async def set_roster(self, given: object) -> list[str]:
        """The names allowed to join (an empty list lets anyone join again), as the instructor spelt them."""
        if not isinstance(given, list) or len(given) > 2000:
            raise RoomError(400, "bad_roster", "A roster is a list of at most 2000 names.")
        roster: dict[str, str] = {}
        for index, item in enumerate(given):
            name = clean_name(item)
            if name is None:
                raise RoomError(400, "bad_roster", f"roster[{index}]={str(item)[:60]!r} is not a name.")
            roster.setdefault(name_key(name), name)
        await self._saved(self.store.put_setting, "roster", json.dumps(list(roster.values()), ensure_ascii=False))
        self.room.roster = roster
        self.room.version += 1
        self._touch()
        return list(roster.values())

    async def rotate_key(self) -> str:
        """A new instructor's key; the old one opens nothing from now on."""
        key = new_secret("room-")
        await self._saved(self.store.put_setting, "instructor_key", key)
        self.key = key
        return key

    def _forget_keys(self, name: str) -> None:
        for key in [key for key, owner in self._keys.items() if owner == name]:
            del self._keys[key]

    # -- their own loops --------------------------------------------------------------------------

    async def learner_for_api_key(self, api_key: str | None) -> str | None:
        if not api_key or not api_key.startswith("sk-room-"):
            return None
        if api_key in self._keys:
            return self._keys[api_key]
        record = await asyncio.to_thread(self.store.by_api_key, api_key)
        if record is None or record.name not in self.room.learners:
            return None
        self._keys[api_key] = record.name
        return record.name

    async def record(self, name: str, exchange: Exchange) -> None:
        """Keep the conversation `exchange` belongs to (after the learner had their answer: a failed
        write only loses this transcript)."""
        now = time.time()
        found = self.conversations.record(name, exchange, now)
        if found is None or name not in self.room.learners:
            return
        key, chat = found
        with contextlib.suppress(RoomError):
            await self._saved(self.store.put_conversation, name, key, now, chat)
            dropped = self.room.put_conversation(name, key, chat)
            if dropped is not None:
                await self._saved(self.store.drop_conversation, name, dropped)
            self._touch()

    # -- the page's stream ------------------------------------------------------------------------

    def fragments(self) -> dict[str, Any]:
        """The page's live parts as of now (see `_page.fragments`)."""
        snapshot = self.room.snapshot(time.time())
        return {"now": snapshot["now"], "version": snapshot["version"], **_page.fragments(snapshot)}

    def _touch(self) -> None:
        self.live.touch()
