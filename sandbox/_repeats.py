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

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._scenario import Scenario
from ._types import Message, Text, ToolCall, ToolResult, assembled
from .wire import Rule, WireError, WireFormat

__all__ = ["REPEAT_WINDOW", "Digested", "RepeatGuard", "history_keys", "repeat_error"]

REPEAT_WINDOW = 2.0
"""Seconds: identical requests closer together than this count toward the budget as one runaway."""


@dataclass(frozen=True)
class Digested:
    """A history digested up to some message: where a continuation of kept state goes on from."""

    scope: str
    messages: int
    digest: Any
    """The `hashlib` state after those messages (copied before it is updated)."""
    before_last: str | None


def history_keys(
    scope: str, messages: Sequence[Message], resume: Digested | None = None
) -> tuple[str, str | None, Digested]:
    """Digests of the whole history, and of the history before its last model turn (None without one):
    the key of this request, and the key of the request this one continued; and the state to go on
    from. `scope` keeps apart what must not meet (the path and scenario). `resume` (of the same
    scope, over the start of `messages`) digests only the messages after it."""
    if resume is not None and resume.scope == scope and resume.messages <= len(messages):
        digest, before_last, rest = resume.digest.copy(), resume.before_last, messages[resume.messages :]
    else:
        digest = hashlib.blake2b(scope.encode("utf-8", "surrogatepass"), digest_size=16)
        before_last, rest = None, messages
    # Updating with the messages one by one or joined is the same digest: only the state before the
    # last model turn is wanted on the way.
    texts: list[str] = []
    last = -1
    for message in rest:
        if message.role == "assistant":
            last = len(texts)
        texts.append(_encoded(message))
    if last >= 0:
        digest.update("".join(texts[:last]).encode("utf-8", "surrogatepass"))
        before_last = digest.copy().hexdigest()
        texts = texts[last:]
    digest.update("".join(texts).encode("utf-8", "surrogatepass"))
    done = assembled(Digested, scope=scope, messages=len(messages), digest=digest, before_last=before_last)
    return digest.hexdigest(), before_last, done


def _encoded(message: Message) -> str:
    """The message as the model reads it, quickly (a dataclass repr costs several times more)."""
    out: list[str] = [message.role]
    for part in message.content:
        if isinstance(part, Text):
            out.append(f"t\x1f{part.text}")
        elif isinstance(part, ToolCall):
            out.append(f"c\x1f{part.id}\x1f{part.name}\x1f{part.arguments!r}")
        elif isinstance(part, ToolResult):
            out.append(f"r\x1f{part.call_id}\x1f{part.is_error}\x1f{part.content}")
        else:
            out.append(repr(part))
    return "\x1e".join(out) + "\x1d"


class RepeatGuard:
    """Counts of requests that did not move on, per sender; bounded in size."""

    def __init__(self, window: float = REPEAT_WINDOW, size: int = 10_000) -> None:
        self.window = window
        self._size = size
        self._seen: OrderedDict[tuple[str, str], tuple[int, float, int]] = OrderedDict()
        """(sender, history) -> (count, last seen, the moved-on mark when last counted)."""
        self._moved: OrderedDict[str, int] = OrderedDict()
        """history -> the mark of the last time a continuation of it arrived."""
        self._mark = 0
        self._lock = threading.Lock()

    def moved_on(self, history: str) -> None:
        """A request continued the conversation whose history digest is `history`."""
        with self._lock:
            self._mark += 1
            self._moved.pop(history, None)
            self._moved[history] = self._mark
            if len(self._moved) > self._size:
                self._moved.popitem(last=False)

    def count(self, sender: str, history: str) -> int:
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


def repeat_error(wire: WireFormat, scenario: Scenario, budget: int, repeats: int) -> WireError:
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
