"""A bounded memo for the parts of answers that many answers share (a step's stream frames, a plain
answer's text around its id, the request fields a Responses answer echoes): the room's learners run
the same scenario, so their answers at one step are the same but for the ids that name each answer
and the figures that count each request, and writing the rest once saves most of an answer's cost.

Touches nothing but itself. What it holds must be a pure function of its key (the caller's contract:
no id of one answer may be part of a value, only what every answer with that key shares), and
immutable (`bytes`, tuples), since any number of threads and senders get the same value. Bounded in
entries and in bytes as the caller counts them; a value above `largest` is never kept, so one huge
answer cannot take the memo's room or pin its memory.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["Memo"]

V = TypeVar("V")


class Memo(Generic[V]):
    """An LRU of at most `entries` values and `max_bytes` bytes (each value's `size` as `put` is told),
    none above `largest`; every method is atomic. `cache_clear` and `cache_info` as a `functools` memo
    has them, so whatever empties the sandbox's memos (tests that count calls) empties this one."""

    def __init__(self, entries: int, max_bytes: int, largest: int) -> None:
        self.entries = entries
        self.max_bytes = max_bytes
        self.largest = largest
        self._values: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.cache_clear = self._clear
        """Empties the memo (an attribute of the memo, not of its class, as a `functools` memo has it:
        whatever empties the memos it finds in a module must not call it on the class)."""

    @property
    def held(self) -> int:
        """The bytes held, as counted."""
        return self._bytes

    def get(self, key: Hashable) -> V | None:
        """The value under `key`, made the most recently used. Without the lock: the lookup and the
        move are each one call into `OrderedDict`, which no other thread interleaves (the keys are
        tuples of strings and numbers, hashed and compared without Python code), and a key that a
        `put` in another thread evicts between the two is a hit all the same. Every answer asks."""
        values = self._values
        found = values.get(key)
        if found is None:
            return None
        try:
            values.move_to_end(key)
        except KeyError:  # evicted meanwhile: its value is still the one the key stands for
            pass
        return found[0]

    def put(self, key: Hashable, value: V, size: int) -> None:
        """Keep `value` under `key` if it fits (`size` at most `largest`), the least recently used going
        first to make room."""
        if size > self.largest:
            return
        with self._lock:
            old = self._values.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._values[key] = (value, size)
            self._bytes += size
            while len(self._values) > self.entries or self._bytes > self.max_bytes:
                _, (_, gone) = self._values.popitem(last=False)
                self._bytes -= gone

    def _clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._bytes = 0

    def cache_info(self) -> int:
        """The values held."""
        return len(self._values)
