"""The repeat guard: the one runaway a request's history cannot show, told apart from a rerun.

May touch: nothing but its own counts. A loop that resends a request without appending the answer
never grows its history, so the budget cannot see it. A test suite, a soak or a benchmark that runs
one complete loop again and again through one client sends the same requests too, but each time
its conversation moves on: the answer's calls come back with their results, or the answer was the
final one. So the guard counts a request only while its conversation has not moved on:

- a request whose answer calls tools counts, per sender, each time it arrives within `window`
  seconds of the last, until a request arrives (from any sender) whose history holds this one's
  messages followed by a model turn: the conversation moved on, and the count starts again;
- a request whose answer is the final one is never counted: that conversation is at its end, and
  the next one the same is a rerun.

Requests are compared by their neutral history (what the model would read), so a loop that only
changes a field the history does not hold (a temperature, the order of the JSON keys) is still
the same request.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..messages._types import Message, Part, Text, ToolCall, ToolResult
from ..wire import ErrorResponse, Rule, WireFormat
from ._scenario import Scenario

__all__ = ["REPEAT_WINDOW", "Digested", "RepeatGuard", "Repeats", "history_keys", "repeat_error"]

REPEAT_WINDOW = 2.0
"""Seconds: identical requests closer together than this count toward the budget as one runaway."""


@dataclass(frozen=True)
class Digested:
    """A history digested up to some message: where a continuation of kept state goes on from."""

    scope: str
    messages: int
    digest: int
    """The key of the history up to those messages."""
    before_last: int | None


def history_keys(
    scope: str, messages: Sequence[Message], resume: Digested | None = None, digest: Callable[[object], int] = hash
) -> tuple[int, int | None]:
    """Keys of the whole history, and of the history before its last model turn (None without one):
    the key of this request, and the key of the request this one continued (`Digested` holds them
    for a continuation). `scope` keeps apart what must not meet (the path and scenario). `resume` (of
    the same scope, over the start of `messages`) goes on from there, over the messages after it
    only. `messages` is a history the replay accepted (see `_next_key`).

    A key is `digest` of the one before it and the next message, chained from the scope's: by default
    Python's hash, 64 bits salted per process (so no sender can build a collision ahead), enough for
    a guard in one process; a store shared by several processes gives a keyed digest of its own
    (`Repeats.digest`), the same in all of them."""
    if resume is not None and resume.scope == scope and resume.messages <= len(messages):
        key, before_last, rest = resume.digest, resume.before_last, messages[resume.messages :]
    else:
        key, before_last, rest = digest(scope), None, messages
    for message in rest:
        role = message.role
        if role == "assistant":
            before_last = key
        content = message.content
        part = content[0] if len(content) == 1 else None
        kind = type(part)
        # One part of the two kinds most messages are (a prompt, a tool result): the tuple `_next_key`
        # makes, made at once.
        if kind is Text:
            key = digest((key, role, "t", part.text))  # type: ignore[union-attr]
        elif kind is ToolResult:
            key = digest((key, role, "r", part.call_id, part.is_error, part.content))  # type: ignore[union-attr]
        else:
            key = _next_key(key, role, content, digest)
    return key, before_last


def _next_key(key: int, role: str, content: Sequence[Part], digest: Callable[[object], int] = hash) -> int:
    """The key of a history of key `key` followed by a message of `role` and `content`, as the model
    reads it: its role and each part's fields, each a field of the hashed tuple (so no text can pose
    as a field boundary)."""
    fields: list[object] = [key, role]
    for part in content:
        fields += _part_fields(part)
    return digest(tuple(fields))


def _part_fields(part: Part) -> tuple[object, ...]:
    """A part's fields in the key. A call is its id and name: the replay matched its arguments to the
    call the script made at that step already (as dicts, whatever the order of their keys), so they
    tell no two accepted histories apart."""
    if isinstance(part, Text):
        return ("t", part.text)
    if isinstance(part, ToolCall):
        return ("c", part.id, part.name)
    if isinstance(part, ToolResult):
        return ("r", part.call_id, part.is_error, part.content)
    return ("p", repr(part))


class Repeats(Protocol):
    """The repeat guard's view, as a store keeps it: in one process (`RepeatGuard`), or shared by the
    processes of one store (`sandbox.engine.kept`'s SQLite and Redis stores)."""

    def digest(self, value: object) -> int:
        """The history keys' digest (`history_keys`): the same for the same value wherever it is asked."""

    def moved_on(self, history: int) -> None:
        """A request continued the conversation whose history key is `history`."""

    def count(self, sender: str, history: int) -> int:
        """How many times in a row (`REPEAT_WINDOW` apart at most) `sender` has sent `history` without
        its conversation moving on, this time included."""


class RepeatGuard:
    """Counts of requests that did not move on, per sender, in one process; bounded in size."""

    digest = staticmethod(hash)

    def __init__(self, window: float = REPEAT_WINDOW, size: int = 10_000) -> None:
        self.window = window
        self._size = size
        self._seen: OrderedDict[tuple[str, int], tuple[int, float, int]] = OrderedDict()
        """(sender, history) -> (count, last seen, the moved-on mark when last counted)."""
        self._moved: OrderedDict[int, int] = OrderedDict()
        """history -> the mark of the last time a continuation of it arrived."""
        self._mark = 0
        self._lock = threading.Lock()

    def moved_on(self, history: int) -> None:
        """A request continued the conversation whose history key is `history`."""
        with self._lock:
            self._mark += 1
            self._moved.pop(history, None)
            self._moved[history] = self._mark
            if len(self._moved) > self._size:
                self._moved.popitem(last=False)

    def count(self, sender: str, history: int) -> int:
        """How many times in a row (`window` apart at most) `sender` has sent `history` without its
        conversation moving on, this time included."""
        now = time.monotonic()
        key = (sender, history)
        with self._lock:
            moved = self._moved.get(history, 0)
            seen, last, mark = self._seen.pop(key, (0, now, moved))
            seen = seen + 1 if now - last <= self.window and mark == moved else 1
            self._seen[key] = (seen, now, moved)
            if len(self._seen) > self._size:
                self._seen.popitem(last=False)
            return seen


def repeat_error(wire: WireFormat, scenario: Scenario, budget: int, repeats: int) -> ErrorResponse:
    return wire.error(
        400,
        f"sandbox: this exact request has arrived {repeats} times, each within {REPEAT_WINDOW:g} s of the "
        f"last (scenario {scenario.name!r}), over the budget of {budget}, and its conversation never moved "
        "on: no request came back with this answer's calls and their results. A loop that never appends "
        "resp.message and the tool results asks the model the same question forever; append them, and "
        "bound the loop (about 5 rounds).",
        rule=Rule.BUDGET,
        code="sandbox_budget_exhausted",
    )
