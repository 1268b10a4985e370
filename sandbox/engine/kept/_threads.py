"""Anthropic message threads as kept state: a `thread` request expanded into the whole request it
stands for, and walked from its thread's snapshot when it has one.

May touch: the store (a claim on the turn continued), the Anthropic wire format's walk
(`continue_thread`, `walk_thread`) and its error envelope. What the real API does, as the official
SDK reads it, is in `sandbox.engine.kept`'s docstring.
"""

from __future__ import annotations

import json
from typing import Any

from ...wire import Conversation, ErrorResponse, WireFormat
from ...wire._sse import compact_bytes
from ...wire.anthropic import Thread, continue_thread, walk_thread
from ._chain import ContinuationState, Resume
from ._errors import fingerprint_mismatch, thread_error, thread_refusal, unsupported_in_thread
from ._expanded import Expanded, joined_bytes, reads_alike
from ._store import Claim, Store

__all__ = ["THREAD_CREATE_ONLY", "expand_thread", "parse_thread"]

THREAD_CREATE_ONLY = ("system", "tools")
"""The fields a thread keeps from its `create` request: a continuation sends them the same, or not at all."""


def expand_thread(store: Store, wire: WireFormat, data: dict[str, Any], owner: str) -> Expanded:
    """The whole request a `thread` request stands for; raise `ErrorResponse` for one the sandbox cannot
    continue. A continuation's claim must be given back (`KeptState.keep` or `release`)."""
    thread = data["thread"]
    rest = {key: value for key, value in data.items() if key != "thread"}
    unsupported = unsupported_in_thread(wire, rest)
    if unsupported is not None:
        raise unsupported
    kind = thread.get("type")
    if kind == "create":
        return Expanded(compact_bytes(rest), keep=True, resume=Resume())
    previous = thread.get("previous_message_id")
    if kind != "continue" or not isinstance(previous, str):
        raise thread_error(
            wire,
            400,
            f'thread: expected {{"type": "create"}} or {{"type": "continue", '
            f'"previous_message_id": "msg_..."}}, got {json.dumps(thread)[:200]}',
            None,
        )
    claim = store.claim(previous, owner, once=True)
    if not isinstance(claim, Claim):
        raise thread_refusal(wire, previous, claim, store)
    stored = json.loads(claim.fields) if claim.fields else {}
    changed = [f"`{name}`" for name in THREAD_CREATE_ONLY if name in rest and rest[name] != stored.get(name)]
    if changed:
        store.release(claim)
        raise fingerprint_mismatch(wire, changed)
    messages = rest.pop("messages", [])
    if not isinstance(messages, list):
        messages = []
    new_items = joined_bytes(messages)
    fields = {**rest, **stored}
    snapshot = claim.snapshot if isinstance(claim.snapshot, ContinuationState) else None
    resume, short = Resume(), None
    if snapshot is not None and isinstance(snapshot.walked, Thread) and reads_alike(compact_bytes(rest), new_items):
        resume.walked, resume.replayed = snapshot.walked, snapshot.replayed
        resume.chain_bytes = snapshot.chain_bytes
        short = {**fields, "messages": messages}
    return Expanded(
        b"",
        keep=True,
        claim=claim,
        new_items=new_items,
        resume=resume,
        short=short,
        splice=(fields, "messages", (*claim.history, new_items)),
    )


def parse_thread(wire: WireFormat, expanded: Expanded, resume: Resume) -> Conversation:
    """A thread's request in the neutral model: a continuation with its thread's snapshot checks only
    its own messages (`continue_thread`); any error, or no snapshot, and the whole request is walked,
    leaving the walk its answer's snapshot is made from."""
    if isinstance(resume.walked, Thread) and expanded.short is not None:
        try:
            conversation, walk = continue_thread(expanded.short, resume.walked)
        except ErrorResponse:
            resume.walked = resume.replayed = None  # walked whole, for the exact error
        else:
            resume.parser, resume.tail_only = walk, True
            resume.full = expanded.walk_whole(wire, path_model=None, path_stream=False)
            return conversation
    conversation, resume.parser = walk_thread(expanded.whole)
    return conversation
