"""State a real provider keeps for its client, kept the same way: Anthropic message threads and OpenAI
Responses `previous_response_id` (with `store`, on by default).

May touch: the request bytes before the wire format parses them, and the answer after; never the
script engine, which stays stateless (DESIGN.md). Before a request reaches the wire format, `expand`
turns a continuation into the full request the client would otherwise have sent, history included,
and after a successful answer `keep` stores what that turn added under the response's id. A
Responses continuation whose chain left a snapshot (`_chain`) is walked from it (`parse`): only
its own `input` is read, and the answer is the one the whole request would get.

Whose state it is: the sandbox finds state only by an id it issued, and every response id is
unique to its answer (the engine numbers its answers), so two senders of the same request never
share a thread or a stored response. A continuation must also come from the same owner as the
state (the credential the request carried, as a real provider scopes stored state to its key).
Memory is bounded in entries and bytes, counted as held (`_store`); the oldest state goes first,
and nothing survives the process.

What the real APIs do, as the official SDKs read it:
- Anthropic (`anthropic` 2.15, `types/beta/beta_message_thread_param.py`, `lib/threads/_thread_state.py`):
  `"thread": {"type": "create"}` holds the conversation under the response's `id`; `{"type":
  "continue", "previous_message_id": ...}` sends only the new messages and no `system`/`tools` (the
  thread keeps those). Each response can be continued once. Rejections carry
  `error.details.error_code`: `thread_not_found` (404: the SDK replays the whole history under a new
  thread), `thread_already_continued`, `thread_continue_in_flight`, `thread_fingerprint_mismatch`,
  `thread_unsupported_request` (400; `_error_classes.py`). Their texts are [INF], written from the
  SDK's docstrings for those errors.
- OpenAI Responses (wire-openai.md 3.1): `previous_response_id` names a stored response; its input
  and output items come before the new `input`; `instructions` and `tools` are not carried over.
  `store: false` keeps nothing. Any stored response can be continued any number of times.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..wire import Conversation, ModelTurn, WireError, WireFormat
from ..wire._sse import dumps
from ..wire.openai_responses import parse_continuing, walk_answer
from ._chain import Replayed, Resume, Snapshot, snapshot_size
from ._conversations import CONVERSATIONS, Conversations, conversation_id, normalise_items
from ._errors import (
    explain_missing_conversation,
    explain_missing_response,
    fingerprint_mismatch,
    thread_error,
    thread_refusal,
    unsupported_in_thread,
)
from ._store import ENTRY_OVERHEAD, Claim, Entry, Store

__all__ = ["CONVERSATIONS", "DEFAULT_MAX_KEPT", "DEFAULT_MAX_KEPT_BYTES", "Expanded", "KeptState", "Replayed", "Resume"]

DEFAULT_MAX_KEPT = 2_000
"""Stored responses and thread turns kept at most; the oldest is forgotten first."""
DEFAULT_MAX_KEPT_BYTES = 64 * 1024 * 1024
"""Bytes of stored history kept at most, counted as held in memory."""

_THREAD_CREATE_ONLY = ("system", "tools")
_MARKERS = (b'"previous_response_id"', b'"thread"', b'"conversation"')


@dataclass(frozen=True)
class Expanded:
    """A request as the engine sees it, and what to keep once it is answered."""

    body: bytes
    """The request as the wire format reads it; empty for a stored response's continuation, whose
    whole request is `whole` (spliced only if it is walked whole)."""
    keep: bool = False
    """Store the answered turn under the response's id (a thread turn, or `store` not false)."""
    claim: Claim | None = None
    """The stored turn this request continues, held until it is answered or fails."""
    new_items: bytes | None = None
    """The JSON of the messages or items the client sent with a continuation (None: the whole request's)."""
    missing: str | None = None
    """Why the store does not hold the `previous_response_id` (`Store.claim`'s reason): the wire format
    reports it, `explain` adds why."""
    missing_conversation: str | None = None
    """A `conversation` the store does not hold for this sender: the wire format reports it."""
    conversation: str | None = None
    """The conversation this request reads, to which its input and output are appended."""
    conversation_input: bytes = b"[]"
    """The request's own `input`, as JSON, for the conversation."""
    echo: Mapping[str, Any] = field(default_factory=dict)
    """Request fields the expansion removed that the answer echoes (`previous_response_id`)."""
    resume: Resume | None = None
    """A Responses request's head start from its chain's snapshot, and what it leaves (`_chain`)."""
    short: dict[str, Any] | None = None
    """The continuation's own fields and `input`, walked after the chain's snapshot."""

    splice: tuple[Mapping[str, Any], str, tuple[bytes, ...]] | None = None
    """The whole request as fields and the chain's fragments, spliced only when it is walked whole."""

    @property
    def whole(self) -> bytes:
        """The request the continuation stands for, history included."""
        return _splice(*self.splice) if self.splice is not None else self.body

    def restore(self, conversation: Conversation) -> Conversation:
        """The conversation as the client sent it, for the answer's echo of the request."""
        return replace(conversation, raw={**conversation.raw, **self.echo}) if self.echo else conversation


class KeptState:
    """The threads and stored responses of one engine: one `sandbox serve` process, one transport, or
    one `mock()` block."""

    def __init__(self, max_entries: int = DEFAULT_MAX_KEPT, max_bytes: int = DEFAULT_MAX_KEPT_BYTES) -> None:
        self.store = Store(max_entries, max_bytes)
        self.conversations = Conversations(self.store)
        """OpenAI's Conversations endpoints (`CONVERSATIONS`), over the same store."""

    def __len__(self) -> int:
        return len(self.store)

    @property
    def max_entries(self) -> int:
        return self.store.max_entries

    @property
    def max_bytes(self) -> int:
        return self.store.max_bytes

    @staticmethod
    def may_continue(body: bytes) -> bool:
        """Whether `body` might continue kept state (a cheap byte search): such a request is answered
        off the event loop, since its history is the chain's, not only its own bytes."""
        return any(marker in body for marker in _MARKERS)

    # -- before the engine -------------------------------------------------------------------------

    def expand(self, wire: WireFormat, body: bytes, owner: str = "") -> Expanded:
        """The full request a continuation stands for; raise `WireError` for a thread the sandbox cannot
        continue. Anything it does not recognise goes on unchanged, for the wire format to judge.
        A returned `claim` must be given back: `keep` on success, `release` otherwise."""
        if wire.name == "anthropic" and b'"thread"' in body:
            data = _object(body)
            if data is not None and isinstance(data.get("thread"), dict):
                return self._expand_thread(wire, data, owner)
        if wire.name == "openai-responses":
            data = _object(body) if b'"previous_response_id"' in body or b'"conversation"' in body else None
            if data is not None and isinstance(data.get("previous_response_id"), str):
                if data.get("conversation") is not None:
                    return Expanded(body)  # both: the wire format refuses the pair
                return self._expand_response(body, data, owner)
            key = conversation_id(data.get("conversation")) if data is not None else None
            if data is not None and key is not None:
                return self._expand_conversation(body, data, key, owner)
            keep = b'"store"' not in body or _stores(body)
            return Expanded(body, keep=keep, resume=Resume() if keep else None)
        return Expanded(body)

    def parse(self, wire: WireFormat, expanded: Expanded, *, path_model: str | None, path_stream: bool) -> Conversation:
        """The expanded request in the neutral model, as `wire.parse_request` reads it; a Responses
        request that keeps its answer is walked so that its continuation can go on from it, and a
        continuation with its chain's snapshot walks only its own input (`_chain`)."""
        resume = expanded.resume
        if resume is None:
            return wire.parse_request(expanded.whole, path_model=path_model, path_stream=path_stream)
        data = expanded.short if resume.walked is not None else _object(expanded.whole)
        if data is None:
            return wire.parse_request(expanded.whole, path_model=path_model, path_stream=path_stream)
        try:
            conversation, parser = parse_continuing(data, resume.walked)
        except WireError:
            if resume.walked is None:
                raise  # the whole request was walked: its error is the exact one
            resume.walked = resume.replayed = None
            return wire.parse_request(expanded.whole, path_model=path_model, path_stream=path_stream)
        resume.parser, resume.first = parser, parser.first
        if resume.walked is not None:
            resume.full = lambda: expanded.restore(
                wire.parse_request(expanded.whole, path_model=path_model, path_stream=path_stream)
            )
        return conversation

    def _expand_response(self, body: bytes, data: dict[str, Any], owner: str) -> Expanded:
        previous: str = data["previous_response_id"]
        new_input = data.get("input", [])
        if isinstance(new_input, str):
            new_input = [{"role": "user", "content": new_input}]
        if not isinstance(new_input, list):
            return Expanded(body)  # a wrong type: the wire format says so
        claim = self.store.claim(previous, owner, once=False)
        if not isinstance(claim, Claim):
            return Expanded(body, missing=claim)  # the wire format answers "Previous response ... not found."
        new_items = b",".join(_dumps(item) for item in new_input)
        rest = {key: value for key, value in data.items() if key not in ("previous_response_id", "input")}
        keep = data.get("store") is not False
        snapshot = claim.snapshot if isinstance(claim.snapshot, Snapshot) else None
        resume = None
        if keep or snapshot is not None:
            resume = Resume()
            if snapshot is not None:
                resume.walked, resume.replayed, resume.chain_bytes = (
                    snapshot.walked,
                    snapshot.replayed,
                    snapshot.chain_bytes,
                )
        return Expanded(
            b"",
            keep=keep,
            claim=claim,
            new_items=new_items,
            echo={"previous_response_id": previous},
            resume=resume,
            short={**rest, "input": new_input} if snapshot is not None else None,
            splice=(rest, "input", (*claim.history, new_items)),
        )

    def _expand_conversation(self, body: bytes, data: dict[str, Any], key: str, owner: str) -> Expanded:
        new_input = data.get("input", [])
        if isinstance(new_input, str):
            new_input = [{"role": "user", "content": new_input}]
        if not isinstance(new_input, list):
            return Expanded(body)
        entry = self.conversations.find(key, owner)
        if entry is None:
            return Expanded(body, missing_conversation=key)  # the wire format answers "Conversation ... not found."
        new_items = b",".join(_dumps(item) for item in new_input)
        history = b",".join(part for part in (entry.items, new_items) if part)
        rest = {name: value for name, value in data.items() if name not in ("conversation", "input")}
        return Expanded(
            _splice(rest, "input", (history,)),
            keep=data.get("store") is not False,
            new_items=history,
            conversation=key,
            conversation_input=_dumps(new_input),
            echo={"conversation": data["conversation"]},
        )

    def _expand_thread(self, wire: WireFormat, data: dict[str, Any], owner: str) -> Expanded:
        thread = data["thread"]
        rest = {key: value for key, value in data.items() if key != "thread"}
        unsupported = unsupported_in_thread(wire, rest)
        if unsupported is not None:
            raise unsupported
        kind = thread.get("type")
        if kind == "create":
            return Expanded(_dumps(rest), keep=True)
        previous = thread.get("previous_message_id")
        if kind != "continue" or not isinstance(previous, str):
            raise thread_error(
                wire,
                400,
                f'thread: expected {{"type": "create"}} or {{"type": "continue", '
                f'"previous_message_id": "msg_..."}}, got {json.dumps(thread)[:200]}',
                None,
            )
        claim = self.store.claim(previous, owner, once=True)
        if not isinstance(claim, Claim):
            raise thread_refusal(wire, previous, claim, self.store)
        stored = json.loads(claim.fields) if claim.fields else {}
        changed = [f"`{name}`" for name in _THREAD_CREATE_ONLY if name in rest and rest[name] != stored.get(name)]
        if changed:
            self.store.release(claim)
            raise fingerprint_mismatch(wire, changed)
        messages = rest.pop("messages", [])
        if not isinstance(messages, list):
            messages = []
        new_items = b",".join(_dumps(message) for message in messages)
        return Expanded(
            _splice({**rest, **stored}, "messages", (*claim.history, new_items)),
            keep=True,
            claim=claim,
            new_items=new_items,
        )

    # -- after the engine --------------------------------------------------------------------------

    def keep(
        self,
        expanded: Expanded,
        wire: WireFormat,
        conversation: Conversation,
        turn: ModelTurn,
        owner: str = "",
        response: Mapping[str, Any] | None = None,
    ) -> None:
        """Store what the answered turn added under the id of the response `turn` became, and give back
        the claim of the turn it continued. `response`: the answer's JSON object, when the caller has
        encoded it already (a plain answer), so it is not encoded twice."""
        if not expanded.keep and expanded.conversation is None:
            self.release(expanded)
            return
        if response is None:
            response = wire.encode_response(turn, conversation)
        raw = conversation.raw
        claim = expanded.claim
        if wire.name == "anthropic":
            sent = expanded.new_items
            if sent is None:
                sent = b",".join(_dumps(message) for message in raw.get("messages", []))
            reply = _dumps({"role": "assistant", "content": response["content"]})
            if claim is not None:
                fields = claim.fields
            else:
                kept_fields = {name: raw[name] for name in _THREAD_CREATE_ONLY if name in raw}
                fields = _dumps(kept_fields) if kept_fields else b""
        else:
            sent = expanded.new_items
            if sent is None:
                items = raw.get("input", [])
                if isinstance(items, str):
                    items = [{"role": "user", "content": items}]
                sent = b",".join(_dumps(item) for item in items)
            reply = b",".join(_dumps(item) for item in response["output"])
            fields = b""
        if expanded.conversation is not None:
            appended = normalise_items([*json.loads(expanded.conversation_input), *response["output"]], turn.request)
            entry = self.store.get(expanded.conversation)
            if entry is not None:
                self.store.update(expanded.conversation, owner, appended, entry.fields, append=True)
        added = b",".join(part for part in (sent, reply) if part)
        size = len(added) + ENTRY_OVERHEAD + (len(fields) if claim is None else 0)
        entry = Entry(added, claim.key if claim else None, fields, owner, size)
        if expanded.keep:
            self._snapshot(entry, expanded, reply)
            self.store.put(str(response["id"]), entry, claim, once=wire.name == "anthropic")

    @staticmethod
    def _snapshot(entry: Entry, expanded: Expanded, reply: bytes) -> None:
        """What the answer's continuation starts from (`_chain`), held beside the entry."""
        resume = expanded.resume
        if resume is None or resume.parser is None:
            return
        walked = walk_answer(resume.parser, json.loads(b"[" + reply + b"]"))
        if walked is None:
            return
        if resume.walked is not None:
            chain = resume.chain_bytes
        else:
            chain = sum(map(len, expanded.claim.history)) if expanded.claim is not None else 0
        chain += len(entry.items)
        entry.snapshot = Snapshot(walked, resume.out, chain)
        entry.snapshot_size = snapshot_size(walked, chain)

    def release(self, expanded: Expanded) -> None:
        """The request failed or kept nothing: the turn it continued may be continued again."""
        if expanded.claim is not None:
            self.store.release(expanded.claim)

    def explain(self, error: WireError, expanded: Expanded) -> WireError:
        """The wire format's "not found" for a missing `previous_response_id`, with the sandbox's reason."""
        if expanded.missing_conversation is not None:
            return explain_missing_conversation(error)
        if expanded.missing is None:
            return error
        return explain_missing_response(error, expanded.missing, self.store)


def _splice(fields: Mapping[str, Any], key: str, parts: tuple[bytes, ...]) -> bytes:
    """`fields` as a JSON object with `key` set to the array of the JSON fragments `parts`, built from
    the stored bytes without parsing them."""
    head = _dumps(fields)
    array = b'"' + key.encode() + b'":[' + b",".join(part for part in parts if part) + b"]"
    return (b"{" + array + b"}") if head == b"{}" else head[:-1] + b"," + array + b"}"


def _object(body: bytes) -> dict[str, Any] | None:
    try:
        data = json.loads(body, parse_constant=_not_json)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _not_json(name: str) -> Any:
    raise ValueError(name)  # NaN and Infinity are not JSON: the wire format says so


def _stores(body: bytes) -> bool:
    data = _object(body)
    return data is None or data.get("store") is not False


def _dumps(data: Any) -> bytes:
    return dumps(data).encode("utf-8", "surrogatepass")  # json.dumps's compact text, its encoder made once
