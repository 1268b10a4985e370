"""State a real provider keeps for its client, kept the same way: Anthropic message threads and OpenAI
Responses `previous_response_id` (with `store`, on by default).

The engine itself stays stateless (DESIGN.md): before a request reaches the wire format, `expand`
turns a continuation into the full request the client would otherwise have sent, history included,
and after a successful answer `keep` stores that history plus the answer under the response's id.
The sandbox only finds state by an id it issued, and response ids derive from the request they
answer (`ModelTurn.response_seed`), so one conversation can never read another's. Memory is bounded
in entries and bytes; the oldest state goes first, and nothing survives the process.

What the real APIs do, as the official SDKs read it:
- Anthropic (`anthropic` 2.14, `types/beta/beta_message_thread_param.py`, `lib/threads/_thread_state.py`):
  `"thread": {"type": "create"}` holds the conversation under the response's `id`; `{"type":
  "continue", "previous_message_id": ...}` sends only the new messages and no `system`/`tools` (the
  thread keeps those). Each response can be continued once. Rejections carry
  `error.details.error_code`: `thread_not_found` (404: the SDK replays the whole history under a new
  thread), `thread_already_continued`, `thread_fingerprint_mismatch` (400). Their texts are [INF],
  written from the SDK's docstrings for those errors.
- OpenAI Responses (wire-openai.md 3.1): `previous_response_id` names a stored response; its input
  and output items come before the new `input`; `instructions` and `tools` are not carried over.
  `store: false` keeps nothing. Any stored response can be continued any number of times.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .wire import Conversation, ModelTurn, Rule, WireError, WireFormat

__all__ = ["DEFAULT_MAX_KEPT", "DEFAULT_MAX_KEPT_BYTES", "Expanded", "KeptState"]

DEFAULT_MAX_KEPT = 2_000
"""Stored responses and thread turns kept at most; the oldest is forgotten first."""
DEFAULT_MAX_KEPT_BYTES = 64 * 1024 * 1024
"""Bytes of stored history kept at most (the JSON of each entry, counted once)."""

_THREAD_CREATE_ONLY = ("system", "tools")


@dataclass(frozen=True)
class Expanded:
    """A request as the engine sees it, and what to keep once it is answered."""

    body: bytes
    keep: bool = False
    """Store the answered conversation under the response's id (a thread turn, or `store` not false)."""
    previous: str | None = None
    """The id the request continued from, if it did."""
    echo: Mapping[str, Any] = field(default_factory=dict)
    """Request fields the expansion removed that the answer echoes (`previous_response_id`)."""

    def restore(self, conversation: Conversation) -> Conversation:
        """The conversation as the client sent it, for the answer's echo of the request."""
        return replace(conversation, raw={**conversation.raw, **self.echo}) if self.echo else conversation


@dataclass
class _Entry:
    data: dict[str, Any]
    size: int
    continued: bool = False


class KeptState:
    """The threads and stored responses of one engine: one `sandbox serve` process, one transport, or
    one `mock()` block."""

    def __init__(self, max_entries: int = DEFAULT_MAX_KEPT, max_bytes: int = DEFAULT_MAX_KEPT_BYTES) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    # -- before the engine -------------------------------------------------------------------------

    def expand(self, wire: WireFormat, body: bytes) -> Expanded:
        """The full request a continuation stands for; raise `WireError` for a thread the sandbox cannot
        continue. Anything it does not recognise goes on unchanged, for the wire format to judge."""
        if wire.name == "anthropic" and b'"thread"' in body:
            data = _object(body)
            if data is not None and isinstance(data.get("thread"), dict):
                return self._expand_thread(wire, data)
        if wire.name == "openai-responses":
            data = _object(body) if b'"previous_response_id"' in body else None
            if data is not None and isinstance(data.get("previous_response_id"), str):
                return self._expand_response(body, data)
            return Expanded(body, keep=b'"store"' not in body or _stores(body))
        return Expanded(body)

    def _expand_response(self, body: bytes, data: dict[str, Any]) -> Expanded:
        previous: str = data["previous_response_id"]
        entry = self._get(previous)
        if entry is None:
            return Expanded(body)  # the wire format answers "Previous response with id ... not found."
        new_input = data.get("input", [])
        if isinstance(new_input, str):
            new_input = [{"role": "user", "content": new_input}]
        if not isinstance(new_input, list):
            return Expanded(body)  # a wrong type: the wire format says so
        expanded = {key: value for key, value in data.items() if key != "previous_response_id"}
        expanded["input"] = [*entry.data["items"], *new_input]
        return Expanded(
            _dumps(expanded),
            keep=data.get("store") is not False,
            previous=previous,
            echo={"previous_response_id": previous},
        )

    def _expand_thread(self, wire: WireFormat, data: dict[str, Any]) -> Expanded:
        thread = data["thread"]
        rest = {key: value for key, value in data.items() if key != "thread"}
        kind = thread.get("type")
        if kind == "create":
            return Expanded(_dumps(rest), keep=True)
        previous = thread.get("previous_message_id")
        if kind != "continue" or not isinstance(previous, str):
            raise _thread_error(
                wire,
                400,
                f'thread: expected {{"type": "create"}} or {{"type": "continue", '
                f'"previous_message_id": "msg_..."}}, got {json.dumps(thread)[:200]}',
                None,
            )
        entry = self._get(previous)
        if entry is None:
            raise _thread_error(
                wire,
                404,
                f"No usable Thread state was found for previous_message_id {previous!r}. Replay the full "
                'conversation with `thread: {"type": "create"}` to start a new Thread.\n\nsandbox: the '
                "sandbox keeps threads in memory, bounded, for as long as it runs: a restart, another "
                "sandbox, or a thread evicted to make room forgets them. The anthropic SDK's tool runner "
                "replays the history by itself on this error.",
                "thread_not_found",
            )
        if entry.continued:
            raise _thread_error(
                wire,
                400,
                f"The response that previous_message_id {previous!r} names has already been continued, and "
                "each response can be continued only once. Continue from the Thread's most recent response "
                "`id`.",
                "thread_already_continued",
            )
        stored = entry.data
        changed = [
            f"`{name}`" for name in _THREAD_CREATE_ONLY if name in rest and rest[name] != stored["fields"].get(name)
        ]
        if changed:
            raise _thread_error(
                wire,
                400,
                "A field that must stay the same across a Thread's turns differs from the value stored with "
                f"the Thread: {', '.join(changed)}. Send the stored values, or replay the full conversation "
                'with `thread: {"type": "create"}` to change them.',
                "thread_fingerprint_mismatch",
            )
        messages = rest.get("messages", [])
        if not isinstance(messages, list):
            messages = []
        expanded = {**rest, **stored["fields"], "messages": [*stored["messages"], *messages]}
        return Expanded(_dumps(expanded), keep=True, previous=previous)

    # -- after the engine --------------------------------------------------------------------------

    def keep(self, expanded: Expanded, wire: WireFormat, conversation: Conversation, turn: ModelTurn) -> None:
        """Store the answered conversation under the id of the response `turn` became."""
        if not expanded.keep:
            return
        response = wire.encode_response(turn, conversation)
        raw = conversation.raw
        if wire.name == "anthropic":
            reply = {"role": "assistant", "content": response["content"]}
            fields = {name: raw[name] for name in _THREAD_CREATE_ONLY if name in raw}
            data: dict[str, Any] = {"messages": [*raw.get("messages", []), reply], "fields": fields}
        else:
            items = raw.get("input", [])
            if isinstance(items, str):
                items = [{"role": "user", "content": items}]
            data = {"items": [*items, *response["output"]]}
        self._put(str(response["id"]), data, expanded.previous if wire.name == "anthropic" else None)

    # -- storage -----------------------------------------------------------------------------------

    def _get(self, key: str) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def _put(self, key: str, data: dict[str, Any], continued: str | None) -> None:
        size = len(_dumps(data))
        with self._lock:
            if continued is not None and continued in self._entries:
                self._entries[continued].continued = True
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old.size
            if size > self.max_bytes:
                return  # larger than the whole store: kept nowhere, found nowhere
            self._entries[key] = _Entry(data, size)
            self._bytes += size
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.size


def _object(body: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _stores(body: bytes) -> bool:
    data = _object(body)
    return data is None or data.get("store") is not False


def _dumps(data: Mapping[str, Any]) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def _thread_error(wire: WireFormat, status: int, message: str, error_code: str | None) -> WireError:
    """Anthropic's envelope with the `error.details.error_code` the SDK branches on."""
    error = wire.error(status, message, rule=Rule.NOT_FOUND if status == 404 else Rule.MALFORMED)
    if error_code is None:
        return error
    body = json.loads(error.body)
    body["error"]["details"] = {"error_code": error_code}
    error.body = _dumps(body)
    return error
