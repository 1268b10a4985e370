"""The page's live stream: each open page is sent only the fragments that changed since its last update.

May touch: nothing but the fragments its `render` returns and its pages' pending updates (and what
its `refresh` reloads). Owned by the server's event loop. One broadcaster looks for changes every
`min_interval` seconds (made by this process or another one sharing the room's file) and renders
the room when it changed, at most every `min_interval` seconds however many learners post, and at
least every `heartbeat` seconds, so "no run for N minutes" appears on its own. A new page gets
everything once; then each update holds the parts (by element id) and the board's rows (by learner)
whose HTML changed, the rows removed, and the rows' order when it moved. A page that reads slowly
gets the updates it missed merged into one, never a backlog.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["Live", "Page"]

Fragments = dict[str, Any]
"""`now`, `version`, `parts` (id -> HTML), `rows` (learner -> HTML), `order` (learners)."""


def changes(before: Fragments, after: Fragments) -> Fragments:
    """What a page showing `before` needs to show `after`."""
    update: Fragments = {
        "now": after["now"],
        "version": after["version"],
        "parts": {key: html for key, html in after["parts"].items() if before["parts"].get(key) != html},
        "rows": {name: html for name, html in after["rows"].items() if before["rows"].get(name) != html},
        "removed": [name for name in before["rows"] if name not in after["rows"]],
    }
    if after["order"] != before["order"]:
        update["order"] = after["order"]
    return update


class Page:
    """One open page: the update it has not been sent yet (merged), and a flag that one is waiting."""

    def __init__(self) -> None:
        self.pending: Fragments | None = None
        self.ready = asyncio.Event()

    def add(self, update: Fragments) -> None:
        pending = self.pending
        if pending is None:
            self.pending = {**update, "parts": dict(update["parts"]), "rows": dict(update["rows"])}
        else:
            pending.update(now=update["now"], version=update["version"])
            pending["parts"].update(update["parts"])
            for name in update.get("removed", ()):
                pending["rows"].pop(name, None)
            pending["rows"].update(update["rows"])
            gone = set(pending.get("removed", ())) | set(update.get("removed", ()))
            pending["removed"] = sorted(gone - set(pending["rows"]))
            if "order" in update:
                pending["order"] = update["order"]
        self.ready.set()

    async def next(self) -> str:
        """The next update as the stream's JSON, once there is one."""
        await self.ready.wait()
        self.ready.clear()
        update, self.pending = self.pending, None
        return json.dumps(update, ensure_ascii=False, separators=(",", ":"))


class Live:
    """The pages open on the room, and the one broadcaster that keeps them current."""

    def __init__(
        self,
        render: Callable[[], Fragments],
        refresh: Callable[[], Awaitable[None]],
        *,
        min_interval: float,
        heartbeat: float,
    ) -> None:
        self.render = render
        self.refresh = refresh
        """Brings what `render` shows up to date with the room's store, calling `touch` if it changed."""
        self.min_interval = min_interval
        self.heartbeat = heartbeat
        self.closing = False
        self._pages: set[Page] = set()
        self._changed = asyncio.Event()
        self._last: Fragments | None = None
        self._broadcaster: asyncio.Task[None] | None = None

    def touch(self) -> None:
        self._changed.set()

    def subscribe(self) -> Page:
        page = Page()
        current = self.render()
        page.add({**current, "removed": [], "full": True})
        self._pages.add(page)
        if self._broadcaster is None or self._broadcaster.done():
            self._last = current
            self._changed = asyncio.Event()
            self._broadcaster = asyncio.get_running_loop().create_task(self._broadcast())
        return page

    async def unsubscribe(self, page: Page) -> None:
        """The page went away; with the last one, the broadcaster stops (and is gone before the loop is)."""
        self._pages.discard(page)
        broadcaster = self._broadcaster
        if not self._pages and broadcaster is not None and not broadcaster.done():
            broadcaster.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await broadcaster

    async def _broadcast(self) -> None:
        """Every `min_interval`: the room brought up to date (another process may have changed it), and
        the pages sent what changed, or everything's `now` once `heartbeat` has passed."""
        clock = asyncio.get_running_loop().time
        sent = clock()
        while self._pages and not self.closing:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), self.min_interval)
            await self.refresh()
            if not self._changed.is_set() and clock() - sent < self.heartbeat:
                continue
            self._changed.clear()
            sent = clock()
            current = self.render()
            update = changes(self._last or current, current)
            self._last = current
            for page in list(self._pages):
                page.add(update)
            await asyncio.sleep(self.min_interval)
