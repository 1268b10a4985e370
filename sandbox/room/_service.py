"""The room's operations: join, post a run, record a learner's exchange, manage learners, and the
page's live stream.

May touch: its `RoomDatabase` (SQLite, always from a worker thread so a slow disk never stalls the event
loop the sandbox answers on) and its in-memory `Room`. Owned by the server's event loop: every
method runs there, except the store calls it hands to threads. The store is the room: every change
is written there (a change that depends on what is stored, in the same transaction), and the `Room`
is this process's view of it, reloaded (`fresh`) before each request reads it and whenever the file
changed, whichever worker process changed it, so every worker answers alike and a failed write
(answered 503) changes nothing. The page's live stream is `Live`'s (see `_live`): the service
renders the fragments and reloads the view at the stream's interval.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import sqlite3
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ..engine._engine import Engine, Exchange
from ..grading.programs._program_cases import CASES
from . import _page
from ._convo import chat_of
from ._guard import RateLimit, new_secret
from ._live import Live
from ._model import Learner, Room, RoomInputError, parse_run, status_of
from ._names import MAX_NAME, clean_name, name_key, name_problem
from ._store import Loaded, RoomDatabase

T = TypeVar("T")

__all__ = ["API_KEY_PREFIX", "SINK", "Joined", "RecordingEngine", "RoomError", "RoomService"]

SINK: contextvars.ContextVar[list[tuple[float, Exchange]]] = contextvars.ContextVar("sandbox_room_sink")
"""Where the engine leaves the exchanges of the request being served for a learner's key, each with
the time it was answered (before the learner had the answer, so before their next request): set by
`RoomApp` around the sandbox's app, read back once the answer is sent (worker threads share it,
as `asyncio.to_thread` copies the context)."""

TOKEN_HOURS = 24.0
"""How long a learner's token lasts: a workshop day. A later run joins again with the old token."""
API_KEY_PREFIX = "sk-room-"
"""How a learner's API key begins: a request with such a key may be a learner's, and is recorded."""


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
            sink.append((time.time(), exchange))
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
        self.live = Live(self.fragments, self.fresh, min_interval=min_interval, heartbeat=heartbeat)
        self.token_seconds = token_hours * 3600
        self._stamps: dict[str, int] = {}
        """Learner -> the store's stamp of them as the view holds them."""
        self._held: dict[str, dict[str, int]] = {}
        """Learner -> conversation id -> its stamp, as the view holds them."""
        self._reloading = asyncio.Lock()
        self._version = store.version()
        self._apply(store.load({}, {}))

    @property
    def closing(self) -> bool:
        """Set as the server shuts down: open streams end, the broadcaster stops."""
        return self.live.closing

    @closing.setter
    def closing(self, value: bool) -> None:
        self.live.closing = value

    # -- the view ---------------------------------------------------------------------------------

    async def fresh(self) -> None:
        """The view as of the store's latest change, whichever process made it (nothing is read when
        nothing changed). A store that cannot be read leaves the view as it was."""
        async with self._reloading:
            try:
                version = await asyncio.to_thread(self.store.version)
                if version == self._version:
                    return
                held = {name: dict(conversations) for name, conversations in self._held.items()}
                loaded = await asyncio.to_thread(self.store.load, dict(self._stamps), held)
            except (sqlite3.Error, OSError) as error:
                print(f"room: the store could not be read ({error}); the page shows what it had.", file=sys.stderr)
                return
            self._version = version
            if int(loaded.settings["seq"]) != self.room.version:
                self._apply(loaded)
                self.live.touch()

    def _apply(self, loaded: Loaded) -> None:
        settings = loaded.settings
        self.key = settings.get("instructor_key", self.key)
        self.room.roster = {name_key(name): name for name in json.loads(settings.get("roster", "[]"))}
        for name in [name for name in self.room.learners if name not in loaded.learners]:
            self.room.leave(name)
            self._stamps.pop(name, None)
            self._held.pop(name, None)
        for name, (joined, stamp) in loaded.learners.items():
            if self._stamps.get(name) == stamp:
                continue
            before = self.room.learners.get(name)
            learner = self.room.restored(Learner(name, joined), loaded.progress.get(name))
            learner.verified = loaded.verified.get(name, {})
            chats = loaded.conversations.get(name, [])
            held = before.conversations if before is not None else {}
            learner.conversations = OrderedDict((key, held[key] if body is None else body) for key, _, body in chats)
            self.room.replace(learner)
            self._stamps[name] = stamp
            self._held[name] = {key: chat_stamp for key, chat_stamp, _ in chats}
        self.room.version = int(settings["seq"])

    async def _saved(self, write: Callable[..., T], *args: Any) -> T:
        """`write(*args)` on the store in a worker thread; a failure is a 503 that changed nothing."""
        try:
            return await asyncio.to_thread(write, *args)
        except (sqlite3.Error, OSError, ValueError) as error:
            print(f"room: the store could not save ({error}); nothing changed.", file=sys.stderr)
            raise RoomError(
                503, "not_saved", "The room could not save this and changed nothing: try again in a moment."
            ) from None

    async def wait(self, limit: RateLimit, key: str) -> float:
        """0 when `limit` lets `key` go ahead now, else the seconds until it does."""
        return await self._saved(limit.wait, key)

    # -- learners ---------------------------------------------------------------------------------

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
        token, api_key = new_secret("rt-"), new_secret(API_KEY_PREFIX)
        expires = now + self.token_seconds
        if holder is not None and isinstance(old_token, str) and old_token:
            if isinstance(old_api_key, str) and old_api_key:
                owner = await asyncio.to_thread(self.store.by_api_key, old_api_key)
                api_key = old_api_key if owner is not None and owner.name == holder else api_key
            if await self._saved(self.store.renew_learner, holder, old_token, token, api_key, expires):
                return Joined(holder, token, api_key, expires)
        taken = f"{name!r} has already joined this room"
        if holder is not None:
            shown = f" (as {holder!r})" if holder != name else ""
            raise RoomError(
                409,
                "name_taken",
                f"{taken}{shown} from another machine. Join with another --name (add an initial), or ask the "
                "instructor to free the name.",
            )
        if not await self._saved(self.store.add_learner, name, token, api_key, now, expires):
            raise RoomError(409, "name_taken", f"{taken} from another machine.")
        await self.fresh()
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
            raise RoomError(401, "unknown_token", _UNKNOWN_TOKEN)
        if record.expires < time.time():
            raise RoomError(
                401,
                "expired_token",
                "Your room token has expired. Run again with --room URL --name NAME to join again.",
            )
        return record.name

    async def is_learner_token(self, token: str) -> bool:
        return await asyncio.to_thread(self.store.by_token, token) is not None

    async def post_run(self, name: str, data: object) -> int:
        """Record `name`'s run: the page's `version` that first shows it."""
        try:
            run = parse_run(data, self.room.titles)
        except RoomInputError as error:
            raise RoomError(400, "bad_run", f"the room cannot read this run: {error}") from None
        now, room = time.time(), self.room

        def change(stored: dict[str, Any] | None) -> dict[str, Any]:
            return room.progress(room.after_run(room.restored(Learner(name, now), stored), now, run))

        stamp = await self._saved(self.store.update_progress, name, change)
        if stamp is None:
            raise RoomError(401, "unknown_token", _UNKNOWN_TOKEN)
        await self.fresh()
        return stamp

    # -- the instructor's hand --------------------------------------------------------------------

    def _known(self, name: str) -> str:
        if name not in self.room.learners:
            raise RoomError(404, "no_learner", f"No learner named {name[:60]!r} in this room.")
        return name

    async def remove(self, name: str) -> bool:
        removed = await self._saved(self.store.remove_learner, name)
        await self.fresh()
        return removed

    async def rename(self, old: str, given: object) -> str:
        """`old` is called `given` from now on; their grader and loop keep working with what they hold."""
        self._known(old)
        new = clean_name(given)
        if new is None:
            raise RoomError(400, "bad_name", f"name={str(given)[:60]!r}: use 1 to {MAX_NAME} visible characters.")
        holder = await self._saved(self.store.rename_learner, old, new)
        if holder is not None:
            raise RoomError(409, "name_taken", f"{new!r} is {holder!r}'s name already: merge them instead.")
        await self.fresh()
        return new

    async def merge(self, source: str, into: str) -> None:
        """One learner who joined twice: `source`'s runs and conversations go to `into`, `source` is gone."""
        self._known(source)
        self._known(into)
        if source == into:
            raise RoomError(400, "same_learner", "Merge a learner into another one, not into themselves.")
        room = self.room

        def change(taken: dict[str, Any] | None, kept: dict[str, Any] | None) -> dict[str, Any]:
            both = (room.restored(Learner(name, 0.0), stored) for name, stored in ((source, taken), (into, kept)))
            return room.progress(room.merged(*both))

        if not await self._saved(self.store.merge_learners, source, into, change):
            raise RoomError(404, "no_learner", f"{source[:60]!r} or {into[:60]!r} left the room meanwhile.")
        await self.fresh()

    async def verify(self, name: str, data: object) -> dict[str, Any]:
        """Record the instructor's own grading of `name` (a run, as a grader posts it) as verified."""
        self._known(name)
        try:
            run = parse_run(data, self.room.titles)
        except RoomInputError as error:
            raise RoomError(400, "bad_run", f"the room cannot read these results: {error}") from None
        now = time.time()
        graded = {}
        for challenge, counts in run["challenges"].items():
            status = status_of(counts["passed"], counts["failed"], counts["not_started"], counts["collected"])
            graded[challenge] = {"status": status, "passed": counts["passed"], "total": counts["collected"], "at": now}
        verified: dict[str, Any] = {}

        def change(stored: dict[str, Any] | None) -> dict[str, Any]:
            verified.update(stored or {}, **graded)
            return verified

        if await self._saved(self.store.update_verified, name, change) is None:
            raise RoomError(404, "no_learner", f"No learner named {name[:60]!r} in this room.")
        await self.fresh()
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
        await self.fresh()
        return list(roster.values())

    async def rotate_key(self) -> str:
        """A new instructor's key; the old one opens nothing from now on, in every worker process."""
        key = new_secret("room-")
        await self._saved(self.store.put_setting, "instructor_key", key)
        await self.fresh()
        return key

    # -- their own loops --------------------------------------------------------------------------

    async def record(self, api_key: str, at: float, exchange: Exchange) -> None:
        """Keep the conversation `exchange` (answered at `at`) belongs to under the learner whose API
        key this is, if anyone's (after the learner had their answer: a failed write only loses this
        transcript)."""
        chat = chat_of(exchange, at)
        if chat is None:
            return
        with contextlib.suppress(RoomError):
            await self._saved(self.store.record_chat, api_key, chat.thread, chat.turns, at, chat.body)

    # -- the page's stream ------------------------------------------------------------------------

    def fragments(self) -> dict[str, Any]:
        """The page's live parts as of now (see `_page.fragments`)."""
        snapshot = self.room.snapshot(time.time())
        return {"now": snapshot["now"], "version": snapshot["version"], **_page.fragments(snapshot)}


_UNKNOWN_TOKEN = (
    "This room does not know that token (the room was started afresh, or the instructor freed your name). "
    "Run again with --room URL --name NAME to join."
)
