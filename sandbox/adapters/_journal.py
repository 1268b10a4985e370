"""The request journal every door keeps: the exchanges it handled, and the helpers a test asserts with.

May touch: nothing but the exchanges appended to it; it reads them and never changes one.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from typing import Any

from ..engine._exchange import Exchange
from ..messages._types import Text, ToolCall, ToolResult

__all__ = ["DEFAULT_JOURNAL_BYTES", "DEFAULT_JOURNAL_SIZE", "Journal"]


DEFAULT_JOURNAL_SIZE = 1000
DEFAULT_JOURNAL_BYTES = 64 * 1024 * 1024
"""The journal's bound in bytes of request and response bodies: a thousand 4 MB exchanges would
otherwise hold gigabytes."""


def _weight(exchange: Exchange) -> int:
    return len(exchange.request_body) + sum(len(chunk) for chunk in exchange.chunks)


class Journal:
    """The exchanges a door handled, in order: the newest `maxlen` of them, and no more than
    `max_bytes` of request and response bodies (None: no bound). The newest exchange is always kept.

    The bounds keep a long-lived mounting's memory flat; `dropped` counts what they let go, so
    nothing disappears unannounced. Thread-safe to append and read.
    """

    def __init__(
        self, maxlen: int | None = DEFAULT_JOURNAL_SIZE, max_bytes: int | None = DEFAULT_JOURNAL_BYTES
    ) -> None:
        self._items: deque[Exchange] = deque()
        self._weights: deque[int] = deque()
        self._lock = threading.Lock()
        self.maxlen = maxlen
        self.max_bytes = max_bytes
        self.bytes = 0
        """Bytes of request and response bodies held now."""
        self.dropped = 0

    def append(self, exchange: Exchange) -> None:
        weight = _weight(exchange)
        with self._lock:
            self._items.append(exchange)
            self._weights.append(weight)
            self.bytes += weight
            while len(self._items) > 1 and (
                (self.maxlen is not None and len(self._items) > self.maxlen)
                or (self.max_bytes is not None and self.bytes > self.max_bytes)
            ):
                self._items.popleft()
                self.bytes -= self._weights.popleft()
                self.dropped += 1

    def __iter__(self) -> Iterator[Exchange]:
        with self._lock:
            return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: int) -> Exchange:
        return self._items[index]

    @property
    def last(self) -> Exchange | None:
        return self._items[-1] if self._items else None

    def errors(self) -> list[Exchange]:
        return [exchange for exchange in self if exchange.error is not None]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._weights.clear()
            self.bytes = 0
            self.dropped = 0

    def calls(self, tool: str | None = None) -> list[ToolCall]:
        """The tool calls the sandbox's answers asked the client to make, in order (of `tool` alone
        when given). Only answers that reached the client whole count: a fault that broke one did not."""
        return [
            part
            for exchange in self
            if exchange.delivers_turn and exchange.turn is not None
            for part in exchange.turn.message.content
            if isinstance(part, ToolCall) and (tool is None or part.name == tool)
        ]

    def assert_called(self, tool: str, /, **arguments: Any) -> ToolCall:
        """The first call of `tool` whose arguments include every one given here (equal values);
        an `AssertionError` listing the calls that were made when there is none."""
        __tracebackhide__ = True
        for call in self.calls(tool):
            if all(key in call.arguments and call.arguments[key] == value for key, value in arguments.items()):
                return call
        wanted = _call_text(tool, arguments)
        made = [f"- {_call_text(call.name, call.arguments)}" for call in self.calls()]
        listing = "\n".join(made) if made else "- (no tool call at all)"
        raise AssertionError(f"No call {wanted} reached the client. The calls that did:\n{listing}")

    def transcript(self) -> str:
        """A stable text of every exchange (no ids, no timings): what was new in each request, then the
        answer. The same script and the same loop give the same text, for snapshot tests."""
        return "".join(_transcript_entry(number, exchange) for number, exchange in enumerate(self, start=1))


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _call_text(name: str, arguments: Any) -> str:
    return f"{name}({', '.join(f'{key}={_json(value)}' for key, value in sorted(dict(arguments).items()))})"


def _transcript_entry(number: int, exchange: Exchange) -> str:
    where = f" [{exchange.scenario} step {exchange.step}]" if exchange.scenario is not None else ""
    lines = [f"#{number} {exchange.method} {exchange.path} -> {exchange.status}{where}"]
    if exchange.conversation is not None:
        messages = exchange.conversation.messages
        answered = max((i for i, message in enumerate(messages) if message.role == "assistant"), default=-1)
        names = {part.id: part.name for message in messages for part in message.content if isinstance(part, ToolCall)}
        for message in messages[answered + 1 :]:
            for part in message.content:
                if isinstance(part, Text) and message.role in ("user", "system"):
                    lines.append(f"  {message.role}: {_json(part.text)}")
                elif isinstance(part, ToolResult):
                    error = " (error)" if part.is_error else ""
                    lines.append(f"  result of {names.get(part.call_id, part.call_id)}{error}: {_json(part.content)}")
    if exchange.fault is not None:
        lines.append(f"  fault: {exchange.fault.kind}")
    if exchange.error is not None:
        lines.append(f"  error: {exchange.error.rule.value}: {exchange.error.message}")
    if exchange.turn is not None and exchange.delivers_turn:
        for part in exchange.turn.message.content:
            if isinstance(part, Text) and part.text:
                lines.append(f"  model: {_json(part.text)}")
            elif isinstance(part, ToolCall):
                lines.append(f"  model calls {_call_text(part.name, part.arguments)}")
    return "\n".join(lines) + "\n"
