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
The store is bounded in entries and bytes (`_store`), the oldest state going first. In memory (the
default) nothing survives the process; a SQLite file or a Redis server is shared by every engine that
names it (`sandbox serve --store`), each id still unique to one answer and one owner.

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

from collections.abc import Mapping
from typing import Any

from ...wire import Conversation, ErrorResponse, ModelTurn, WireFormat
from ...wire._sse import compact_bytes
from ...wire.anthropic import Thread, Walk, thread_after
from ...wire.openai_responses import LaterWalk, Walked, parse_continuing
from ._chain import ContinuationState, Replayed, Resume, snapshot_size
from ._conversations import CONVERSATIONS, Conversations, conversation_id
from ._errors import explain_missing_conversation, explain_missing_response
from ._expanded import Expanded, input_items, joined_bytes, json_object
from ._open import open_store
from ._store import ENTRY_OVERHEAD, Claim, Entry, StoreUnavailable
from ._threads import THREAD_CREATE_ONLY, expand_thread, parse_thread
from ._turns import append_turn, expand_conversation

__all__ = [
    "CONVERSATIONS",
    "DEFAULT_MAX_KEPT",
    "DEFAULT_MAX_KEPT_BYTES",
    "Expanded",
    "KeptState",
    "Replayed",
    "Resume",
    "StoreUnavailable",
]

DEFAULT_MAX_KEPT = 2_000
"""Stored responses and thread turns kept at most; the oldest is forgotten first."""
DEFAULT_MAX_KEPT_BYTES = 64 * 1024 * 1024
"""Bytes of stored history kept at most, counted as held in memory."""

_MARKERS: dict[str | None, tuple[bytes, ...]] = {
    "openai": (),
    "gemini": (),
    "anthropic": (b'"thread"',),
    "openai-responses": (b'"previous_response_id"', b'"conversation"'),
}
"""The fields by which a request of each provider names kept state."""
_ANY_MARKER = tuple(dict.fromkeys(marker for markers in _MARKERS.values() for marker in markers))
"""All of them, for a path the sandbox does not route itself."""


class KeptState:
    """The threads, stored responses and conversations of one engine, in the store `store` names
    (`open_store`): this process's memory by default, or a SQLite file or a Redis server that
    several engines share, in one process or many."""

    def __init__(
        self, max_entries: int = DEFAULT_MAX_KEPT, max_bytes: int = DEFAULT_MAX_KEPT_BYTES, store: str = "memory"
    ) -> None:
        self.store = open_store(store, max_entries, max_bytes)
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
    def may_continue(body: bytes, provider: str | None) -> bool:
        """Whether `body`, for `provider` (None: a path the sandbox does not route itself, such as a
        cloud's), might continue kept state, by a byte search for the fields that name it: such a
        request is answered off the event loop, since its history is the chain's, not only its own
        bytes. Chat Completions and Gemini keep no state, so their bodies are not searched."""
        for marker in _MARKERS.get(provider, _ANY_MARKER):
            if marker in body:
                return True
        return False

    # -- before the engine -------------------------------------------------------------------------

    def expand(self, wire: WireFormat, body: bytes, owner: str = "") -> Expanded:
        """The full request a continuation stands for; raise `ErrorResponse` for a thread the sandbox cannot
        continue. Anything it does not recognise goes on unchanged, for the wire format to judge.
        A returned `claim` must be given back: `keep` on success, `release` otherwise."""
        if wire.name == "anthropic" and b'"thread"' in body:
            data = json_object(body)
            if data is not None and isinstance(data.get("thread"), dict):
                return expand_thread(self.store, wire, data, owner)
        if wire.name == "openai-responses":
            data = json_object(body)  # read once: `parse` walks it (`short`)
            named = data is not None and (data.get("previous_response_id") is not None or "conversation" in data)
            # named as the keys are spelled (a key written with escapes goes on to the wire format)
            if named and data is not None and (b'"previous_response_id"' in body or b'"conversation"' in body):
                if isinstance(data.get("previous_response_id"), str):
                    if data.get("conversation") is not None:
                        return Expanded(body)  # both: the wire format refuses the pair
                    return self._expand_response(body, data, owner)
                key = conversation_id(data.get("conversation"))
                if key is not None:
                    return expand_conversation(self.conversations, body, data, key, owner)
            keep = data is None or data.get("store") is not False or b'"store"' not in body
            return Expanded(body, keep=keep, resume=Resume() if keep else None, short=data if keep else None)
        return Expanded(body)

    def parse(self, wire: WireFormat, expanded: Expanded, *, path_model: str | None, path_stream: bool) -> Conversation:
        """The expanded request in the neutral model, as `wire.parse_request` reads it; a Responses
        request that keeps its answer is walked so that its continuation can go on from it, and a
        continuation with its chain's snapshot walks only its own input (`_chain`)."""
        resume = expanded.resume
        if resume is None:
            return wire.parse_request(expanded.whole, path_model=path_model, path_stream=path_stream)
        if wire.name == "anthropic":
            return parse_thread(wire, expanded, resume)
        data = expanded.short if expanded.short is not None else json_object(expanded.whole)
        if data is None or isinstance(resume.walked, Thread):  # Thread: for mypy only
            return wire.parse_request(expanded.whole, path_model=path_model, path_stream=path_stream)
        try:
            conversation, parser = parse_continuing(data, resume.walked)
        except ErrorResponse:
            if resume.walked is None:
                raise  # the whole request was walked: its error is the exact one
            resume.walked = resume.replayed = None
            return wire.parse_request(expanded.whole, path_model=path_model, path_stream=path_stream)
        resume.parser, resume.first = parser, parser.first
        if resume.walked is not None:
            resume.full = expanded.walk_whole(wire, path_model=path_model, path_stream=path_stream)
        return conversation

    def _expand_response(self, body: bytes, data: dict[str, Any], owner: str) -> Expanded:
        previous: str = data["previous_response_id"]
        new_input = input_items(data)
        if new_input is None:
            return Expanded(body)  # a wrong type: the wire format says so
        claim = self.store.claim(previous, owner, once=False)
        if not isinstance(claim, Claim):
            return Expanded(body, missing=claim)  # the wire format answers "Previous response ... not found."
        new_items = joined_bytes(new_input)
        rest = {key: value for key, value in data.items() if key not in ("previous_response_id", "input")}
        keep = data.get("store") is not False
        snapshot = claim.snapshot if isinstance(claim.snapshot, ContinuationState) else None
        walked = snapshot.walked if snapshot is not None else None
        if isinstance(walked, LaterWalk):
            walked = walked.walk()  # the first continuation of this response walks its answer's items
        if not isinstance(walked, Walked):
            snapshot = None  # a thread's turn named as a response, or items that do not walk: walked whole
        resume = None
        if keep or snapshot is not None:
            resume = Resume()
            if snapshot is not None:
                resume.walked, resume.replayed, resume.chain_bytes = walked, snapshot.replayed, snapshot.chain_bytes
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
                sent = joined_bytes(raw.get("messages", []))
            reply = compact_bytes({"role": "assistant", "content": response["content"]})
            if claim is not None:
                fields = claim.fields
            else:
                kept_fields = {name: raw[name] for name in THREAD_CREATE_ONLY if name in raw}
                fields = compact_bytes(kept_fields) if kept_fields else b""
        else:
            sent = expanded.new_items
            if sent is None:
                sent = joined_bytes(input_items(raw) or [])  # the request was read: its input is a list or text
            reply = joined_bytes(response["output"])
            fields = b""
        if expanded.conversation is not None:
            append_turn(self.conversations, expanded, owner, conversation.model, response["output"], turn.request)
        added = sent + b"," + reply if sent and reply else sent or reply  # no generator for two parts
        size = len(added) + ENTRY_OVERHEAD + (len(fields) if claim is None else 0)
        entry = Entry(added, claim.key if claim else None, fields, owner, size)
        if expanded.conversation_read is not None:  # its history starts with the conversation's items
            items, appended = expanded.conversation_read
            entry.prefix, entry.size = (items, *appended), size + expanded.conversation_bytes
        if expanded.keep:
            if expanded.conversation is None and self.store.snapshots:  # a conversation's: the conversation keeps it
                self._snapshot(entry, expanded, response, reply)
            self.store.put(str(response["id"]), entry, claim, once=wire.name == "anthropic")

    @staticmethod
    def _snapshot(entry: Entry, expanded: Expanded, response: Mapping[str, Any], reply: bytes) -> None:
        """What the answer's continuation starts from (`_chain`), held beside the entry. A Responses walk
        of the answer's items waits for the first continuation (`LaterWalk`: most stored responses
        are never continued), holding a copy of the request's walk and the items' stored bytes `reply`,
        so it keeps only objects it makes itself (tests/engine/kept/test_chains.py proves it holds none of the
        answer's); a thread keeps its answer's message as the bytes `reply` it stores."""
        resume = expanded.resume
        if resume is None or resume.parser is None:
            return
        walked: LaterWalk | Thread | None
        if isinstance(resume.parser, Walk):
            walked = thread_after(resume.parser, reply)
        else:
            walked = LaterWalk.after(resume.parser, response["output"], reply)
        if walked is None:
            return
        if resume.walked is not None:
            chain = resume.chain_bytes
        else:
            chain = sum(map(len, expanded.claim.history)) if expanded.claim is not None else 0
        chain += len(entry.items)
        entry.snapshot = ContinuationState(walked=walked, replayed=resume.out, chain_bytes=chain)
        entry.snapshot_size = snapshot_size(walked, chain)

    def release(self, expanded: Expanded) -> None:
        """The request failed or kept nothing: the turn it continued may be continued again."""
        if expanded.claim is not None:
            self.store.release(expanded.claim)

    def explain(self, error: ErrorResponse, expanded: Expanded) -> ErrorResponse:
        """The wire format's "not found" for a missing `previous_response_id`, with the sandbox's reason."""
        if expanded.missing_conversation is not None:
            return explain_missing_conversation(error, self.store)
        if expanded.missing is None:
            return error
        return explain_missing_response(error, expanded.missing, self.store)
