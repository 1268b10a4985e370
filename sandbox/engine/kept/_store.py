"""The store behind threads, stored responses and conversations: one interface, three backends.

May touch: nothing outside itself (no wire format, no engine). Each entry holds the JSON of what its
turn added (new messages or items, and the answer), as one `bytes` fragment, plus a link to the
entry it continued. A chain of N turns is N small entries, never N copies of a growing history: the
history is the chain's fragments joined, never parsed. The bounds count entries, and bytes as each
fragment's length plus a fixed overhead per entry; past either, the least recently used entries are
forgotten first.

Backends (`_open.open_store`): `memory` (this process: `_memory`), `sqlite:///PATH` (several
processes on one machine, and a restart: `_sqlite`), `redis://HOST:PORT/DB` (several machines:
`_redis`). Every method is atomic in the store, whichever processes share it, so two continuations
of one thread turn never both win. A store also keeps the repeat guard's view (`Store.repeats`): a
shared one in the store, its history keys digested alike in every process (with a key the store
holds), its senders told apart by process. A store that cannot be reached raises
`StoreUnavailable`, which the engine answers with a provider-shaped 503.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from .._repeats import Repeats

__all__ = [
    "ENTRY_OVERHEAD",
    "REMEMBER_EVICTED",
    "Claim",
    "Entry",
    "Store",
    "StoreUnavailable",
]

ENTRY_OVERHEAD = 240
"""Bytes an entry costs beyond its fragments: the entry object, its dict slot and its id."""
REMEMBER_EVICTED = 10_000
"""Evicted ids remembered, so a client that comes back is told why its state is gone."""
REMEMBER_RECORDS = 10_000
"""Records (`Store.record`) the memory backend keeps, the latest changed."""
T = TypeVar("T")
HOLD_SECONDS = 60.0
"""A shared store's hold on a thread turn (`Store.claim`, `once`) lasts at most this long: a process
killed while answering the continuation never releases it, and the turn must not stay held forever."""


class StoreUnavailable(Exception):
    """The store could not be reached or did not answer in time; the message says which and what to do."""


@dataclass
class Entry:
    """One answered turn."""

    items: bytes
    """Comma-separated JSON values, no brackets: what this turn added to the history."""
    parent: str | None
    """The entry this one continued, or None for the start of a chain."""
    fields: bytes
    """A JSON object of the fields a chain keeps from its start (a thread's `system` and `tools`); the
    same `bytes` object down a chain, so it is held once."""
    owner: str
    """Who may continue it (see `KeptState`)."""
    size: int
    appended: tuple[bytes, ...] = ()
    """Fragments appended after `items` (a conversation's turns), held apart so an append copies only
    what is new; the whole is `parts`."""
    prefix: tuple[bytes, ...] = ()
    """Fragments its history starts with, before the chain's own (a conversation turn's response: the
    conversation's items as that turn read them, counted in `size`)."""
    continued: bool = False
    """A thread turn is continued at most once."""
    in_flight: bool = False
    """A continuation of it is being answered right now."""
    snapshot: object = None
    """What its continuation starts from (`_chain.ContinuationState`), if the store holds it (memory only)."""
    snapshot_size: int = 0
    chain: tuple[str, ...] | None = None
    """With a snapshot: the keys of its chain, oldest first, so a claim finds them without a walk."""
    history: tuple[bytes, ...] | None = None
    """With a snapshot: the chain's fragments, oldest first (the same `bytes` as its entries')."""
    intact_at: int = -1
    """The store's count of removed entries when this chain was last known whole: while no entry has
    been removed since, a claim need not look for each link."""

    @property
    def parts(self) -> tuple[bytes, ...]:
        """Its own fragments, `items` first."""
        return (self.items, *self.appended)


@dataclass(frozen=True)
class Claim:
    """A continuation's hold on the entry it continues, taken atomically with the checks."""

    key: str
    history: tuple[bytes, ...]
    """The fragments of the whole chain, oldest first."""
    fields: bytes
    snapshot: object = None
    chain: tuple[str, ...] = ()
    """The keys of the chain, oldest first."""
    intact_at: int = -1


class Store(abc.ABC):
    """Entries by key, bounded in count (`max_entries`) and bytes (`max_bytes`). Every method is atomic."""

    max_entries: int
    max_bytes: int
    where: str | None = None
    """Where the state lives, as an error tells a client whose state is gone; None: this process's memory."""
    snapshots: bool = False
    """Whether it holds snapshots (`_chain`), which are objects of one process: the memory backend only."""

    @abc.abstractmethod
    def __len__(self) -> int:
        """Entries held."""

    @property
    @abc.abstractmethod
    def held(self) -> int:
        """The bytes the store holds, as counted against `max_bytes`."""

    @property
    @abc.abstractmethod
    def evictions(self) -> int:
        """Entries forgotten to make room, since the store was made."""

    @abc.abstractmethod
    def numbers(self) -> Iterator[int]:
        """Numbers for the engine's answers (their ids derive from them), never the same twice among all
        the engines that share the store, a restart included."""

    @abc.abstractmethod
    def record(self, key: str, change: Callable[[bytes | None], tuple[bytes, T]], ttl: float) -> T:
        """Replace the small record `key` with what `change` makes of it (given None when there is
        none), atomically among all the engines that share the store, and return what `change` said
        besides. A record is kept `ttl` seconds after its last change (the memory backend keeps the
        latest `REMEMBER_RECORDS` instead). `change` may run more than once: it must only compute."""

    @abc.abstractmethod
    def repeats(self) -> Repeats:
        """The repeat guard's view (`_repeats`), kept where this store keeps its entries."""

    @abc.abstractmethod
    def was_evicted(self, key: str) -> bool:
        """Whether `key` was forgotten to make room (among the last `REMEMBER_EVICTED`)."""

    @abc.abstractmethod
    def get(self, key: str) -> Entry | None:
        """The entry `key`, whoever owns it."""

    @abc.abstractmethod
    def view(self, key: str, owner: str) -> tuple[bytes, tuple[bytes, ...], int, object] | None:
        """The `items` and `appended` fragments of `key` for `owner`, their bytes and its snapshot, read
        together; None if it is not there."""

    @abc.abstractmethod
    def claim(self, key: str, owner: str, *, once: bool) -> Claim | str:
        """Return the chain of `key` for a continuation, its whole chain now the most recently used,
        and, `once` (a thread turn, continued at most once), hold it until the continuation is
        answered; or say why not, checked in this order: `missing` (never stored, or stored by
        another owner), `evicted`, `continued` (`once`, and it was), `in_flight` (`once`, and another
        continuation holds it), `broken` (an older turn of its chain was forgotten). A stored
        response may be continued by any number of requests at once."""

    @abc.abstractmethod
    def release(self, claim: Claim) -> None:
        """The continuation failed: the entry can be continued again (a no-op for one never held)."""

    @abc.abstractmethod
    def put(self, key: str, entry: Entry, continued: Claim | None, *, once: bool) -> None:
        """Store `entry` under `key` (replacing one there), and release the entry it continued, marked
        continued if `once`. An entry larger than `max_bytes` is forgotten at once; then the least
        recently used are forgotten until the store is within both bounds."""

    @abc.abstractmethod
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
        """Change the one-entry chain `key` (a conversation), now the most recently used: replace its
        `items`, or `append` to them, and set its `fields`; False if it is not there for `owner`. Its
        size follows what it now holds, and it is forgotten if that is over `max_bytes`. A backend
        that keeps snapshots replaces the entry's with `snapshot` only if its fragments are still
        `read`, the ones the snapshot's request read."""

    @abc.abstractmethod
    def remove(self, key: str, owner: str) -> bool:
        """Delete `key` (a conversation the client deleted); False if it is not there for `owner`."""


class Blocks(Iterator[int]):
    """Answer numbers taken from a shared counter a block at a time (`reserve(n)` returns the first of
    `n` numbers no other caller gets), so an answer costs the store one trip per `block` answers."""

    def __init__(self, reserve: Callable[[int], int], block: int = 1024) -> None:
        self._reserve, self._block = reserve, block
        self._next = self._end = 0
        self._lock = threading.Lock()

    def __next__(self) -> int:
        with self._lock:
            if self._next >= self._end:
                self._next = self._reserve(self._block)
                self._end = self._next + self._block
            self._next += 1
            return self._next - 1
