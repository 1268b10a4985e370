"""The memory backend of kept state: the default of `sandbox.transport()`, `mock()` and a one-process
`sandbox serve`; nothing survives the process.

May touch: nothing outside itself. Entries are the `Entry` objects themselves, their fragments the
same `bytes` down a chain, so the byte bound counts each fragment's length plus a fixed overhead per
entry: the figure it holds to is the process's real memory. Beside an entry it may hold a snapshot
(`_chain`), counted against an eighth of the bound.
"""

from __future__ import annotations

import itertools
import operator
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator

from .._repeats import RepeatGuard, Repeats
from ._store import ENTRY_OVERHEAD, REMEMBER_EVICTED, REMEMBER_RECORDS, Claim, Entry, Store, T

__all__ = ["SNAPSHOT_SHARE", "MemoryStore"]

SNAPSHOT_SHARE = 8
"""Snapshots (`_chain`) hold at most this fraction of the byte bound: the stored bytes keep the rest."""
_ITEMS = operator.attrgetter("items")


class MemoryStore(Store):
    """The store in this process's memory: an LRU of entries, every method atomic under one lock. Its
    entries also hold snapshots (`_chain`), the in-process head start of a continuation."""

    snapshots = True

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._evicted: OrderedDict[str, None] = OrderedDict()
        self._snapshots: OrderedDict[str, None] = OrderedDict()
        """The entries holding a snapshot, oldest first: the first let go past `max_snapshot_bytes`."""
        self._snapshot_bytes = 0
        self.max_snapshot_bytes = max_bytes // SNAPSHOT_SHARE
        self._bytes = 0
        self._removals = 0
        """Entries removed since the store was made (evicted, deleted or replaced)."""
        self._evictions = 0
        self._lock = threading.Lock()
        self._records: OrderedDict[str, bytes] = OrderedDict()
        self._records_lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def record(self, key: str, change: Callable[[bytes | None], tuple[bytes, T]], ttl: float) -> T:
        with self._records_lock:
            value, said = change(self._records.pop(key, None))
            self._records[key] = value
            if len(self._records) > REMEMBER_RECORDS:
                self._records.popitem(last=False)
            return said

    def numbers(self) -> Iterator[int]:
        return itertools.count(1)

    def repeats(self) -> Repeats:
        return RepeatGuard()

    @property
    def held(self) -> int:
        return self._bytes

    @property
    def evictions(self) -> int:
        return self._evictions

    def was_evicted(self, key: str) -> bool:
        with self._lock:
            return key in self._evicted

    def get(self, key: str) -> Entry | None:
        with self._lock:
            return self._entries.get(key)

    def view(self, key: str, owner: str) -> tuple[bytes, tuple[bytes, ...], int, object] | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.owner != owner:
                return None
            return entry.items, entry.appended, entry.size - len(entry.fields) - ENTRY_OVERHEAD, entry.snapshot

    def claim(self, key: str, owner: str, *, once: bool) -> Claim | str:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.owner != owner:
                return "evicted" if key in self._evicted else "missing"
            if once and entry.continued:
                return "continued"
            if once and entry.in_flight:
                return "in_flight"
            chain = entry.chain or self._chain(key)
            entries = self._entries
            if chain is None:
                return "broken"
            if entry.intact_at != self._removals and not all(map(entries.__contains__, chain)):
                return "broken"
            deque(map(entries.move_to_end, reversed(chain)), maxlen=0)  # the whole chain is recently used
            history = entry.history
            if history is None:
                history = (*entries[chain[0]].prefix, *map(_ITEMS, map(entries.__getitem__, chain)))
            entry.in_flight = entry.in_flight or once
            return Claim(key, history, entry.fields, entry.snapshot, chain, self._removals)

    def release(self, claim: Claim) -> None:
        with self._lock:
            entry = self._entries.get(claim.key)
            if entry is not None:
                entry.in_flight = False

    def put(self, key: str, entry: Entry, continued: Claim | None, *, once: bool) -> None:
        with self._lock:
            if continued is not None:
                parent = self._entries.get(continued.key)
                if parent is not None:
                    parent.in_flight = False
                    parent.continued = parent.continued or once
                    if entry.snapshot is not None:  # the chain's newest response holds its snapshot
                        self._drop_snapshot(continued.key, parent)
            old = self._entries.pop(key, None)
            if old is not None:
                self._removals += 1
                self._bytes -= old.size
                self._drop_snapshot(key, old)
            if entry.snapshot_size > self.max_snapshot_bytes:
                entry.snapshot, entry.snapshot_size, entry.chain, entry.history, entry.intact_at = (
                    None,
                    0,
                    None,
                    None,
                    -1,
                )
            if entry.size > self.max_bytes:
                self._forget(key)
                return  # larger than the whole store: kept nowhere, found nowhere
            self._entries[key] = entry
            self._bytes += entry.size + entry.snapshot_size
            if entry.snapshot is not None:
                self._snapshots[key] = None
                self._snapshot_bytes += entry.snapshot_size
                entry.chain = (*continued.chain, key) if continued is not None else (key,)
                entry.history = (*continued.history, entry.items) if continued is not None else entry.parts
                entry.intact_at = continued.intact_at if continued is not None else self._removals
            self._make_room()

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
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.owner != owner:
                return False
            still = read is not None and entry.items is read[0] and entry.appended is read[1]
            kept = entry.size - len(entry.fields) - ENTRY_OVERHEAD
            if items is not None or append:
                self._drop_snapshot(key, entry)
            if items is not None:
                entry.items, entry.appended, kept = items, (), len(items)
            if append:
                entry.appended, kept = (*entry.appended, append), kept + len(append)
            if fields is not None:
                entry.fields = fields
            size = kept + len(entry.fields) + ENTRY_OVERHEAD
            self._bytes += size - entry.size
            entry.size = size
            self._entries.move_to_end(key)
            if size > self.max_bytes:
                del self._entries[key]
                self._bytes -= size
                self._drop_snapshot(key, entry)
                self._forget(key)
                return True
            if snapshot is not None and still and snapshot_size <= self.max_snapshot_bytes:
                entry.snapshot, entry.snapshot_size = snapshot, snapshot_size
                self._snapshots[key] = None
                self._snapshot_bytes += snapshot_size
                self._bytes += snapshot_size
            self._make_room()
            return True

    def remove(self, key: str, owner: str) -> bool:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.owner != owner:
                return False
            del self._entries[key]
            self._removals += 1
            self._bytes -= entry.size
            self._drop_snapshot(key, entry)
            return True

    def _make_room(self) -> None:
        """Within the bounds again: the oldest snapshots past their share, then the oldest entries (each
        with its snapshot), so the newest responses keep theirs however full the store is."""
        while self._snapshots and self._snapshot_bytes > self.max_snapshot_bytes:
            key = next(iter(self._snapshots))
            self._drop_snapshot(key, self._entries[key])
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            evicted, gone = self._entries.popitem(last=False)
            self._bytes -= gone.size
            self._drop_snapshot(evicted, gone)
            self._forget(evicted)

    def _drop_snapshot(self, key: str, entry: Entry) -> None:
        if self._snapshots.pop(key, 0) is None:
            self._bytes -= entry.snapshot_size
            self._snapshot_bytes -= entry.snapshot_size
        entry.snapshot, entry.snapshot_size, entry.chain, entry.history, entry.intact_at = None, 0, None, None, -1

    def _chain(self, key: str) -> tuple[str, ...] | None:
        """The keys from the chain's start to `key`; None if a link is gone. Called with the lock held."""
        keys: list[str] = []
        current: str | None = key
        while current is not None:
            entry = self._entries.get(current)
            if entry is None:
                return None
            keys.append(current)
            current = entry.parent
        keys.reverse()
        return tuple(keys)

    def _forget(self, key: str) -> None:
        self._removals += 1
        self._evictions += 1
        self._evicted[key] = None
        if len(self._evicted) > REMEMBER_EVICTED:
            self._evicted.popitem(last=False)
