"""A Responses request's `conversation` as kept state: the request expanded into the whole one it
stands for, and the walk of the conversation's items kept beside them, so the next turn walks only
its own `input`.

May touch: the store (through `Conversations`), the Responses wire format's walk (`parse_continuing`,
`walk_answer`). A conversation is one entry whose items grow: each answered turn appends its input
and output as the Conversations API lists them (`normalised`: ids and statuses added), so its
snapshot is a walk of those stored items, not of the request as it came: the input's items walked
again as stored (what is new, so in proportion to it), then the answer's. Another turn or an
`/items` call that changes the items first lets the snapshot go (`Store.update`).
"""

from __future__ import annotations

import json
from typing import Any

from ...wire import ErrorResponse
from ...wire._sse import compact_bytes
from ...wire.openai_responses import Walked, parse_continuing, walk_answer
from ._chain import ContinuationState, Resume, snapshot_size
from ._conversations import Conversations, normalised
from ._expanded import Expanded, input_items, joined_bytes, reads_alike

__all__ = ["append_turn", "expand_conversation"]


def expand_conversation(
    conversations: Conversations, body: bytes, data: dict[str, Any], key: str, owner: str
) -> Expanded:
    """The whole request a `conversation` request stands for: the conversation's items, then its input."""
    new_input = input_items(data)
    if new_input is None:
        return Expanded(body)
    held = conversations.held(key, owner)
    if held is None:
        return Expanded(body, missing_conversation=key)  # the wire format answers "Conversation ... not found."
    items, appended, size, snapshot = held
    new_items = joined_bytes(new_input)
    rest = {name: value for name, value in data.items() if name not in ("conversation", "input")}
    resume, short = Resume(), None
    walked = snapshot.walked if isinstance(snapshot, ContinuationState) else None  # a conversation's: never a LaterWalk
    if (
        isinstance(snapshot, ContinuationState)
        and isinstance(walked, Walked)
        and reads_alike(compact_bytes(rest), new_items)
    ):
        resume.walked, resume.replayed, resume.chain_bytes = walked, snapshot.replayed, snapshot.chain_bytes
        short = {**rest, "input": new_input}
    return Expanded(
        b"",
        keep=data.get("store") is not False,
        new_items=new_items,
        conversation=key,
        conversation_input=new_input,
        conversation_read=(items, appended),
        conversation_bytes=size,
        echo={"conversation": data["conversation"]},
        resume=resume,
        short=short,
        splice=(rest, "input", (items, *appended, new_items)),
    )


def append_turn(
    conversations: Conversations, expanded: Expanded, owner: str, model: str, output: list[Any], seed: str
) -> None:
    """Append the answered turn's input and `output` to its conversation, with the walk of the items
    it then holds, for the next turn."""
    key = expanded.conversation
    assert key is not None
    added = normalised([*expanded.conversation_input, *output], seed)
    appended = joined_bytes(added)
    snapshot = _snapshot(expanded, model, added, appended) if conversations.store.snapshots else None
    size = snapshot_size(snapshot.walked, snapshot.chain_bytes) if snapshot is not None else 0
    conversations.store.update(
        key, owner, append=appended, snapshot=snapshot, snapshot_size=size, read=expanded.conversation_read
    )


def _snapshot(expanded: Expanded, model: str, added: list[dict[str, Any]], appended: bytes) -> ContinuationState | None:
    """The walk of the conversation's items with `added` after them, or None where it cannot be made
    to judge the next turn as its whole walk would."""
    resume = expanded.resume
    if resume is None or resume.out is None or not reads_alike(appended):
        return None
    count = sum(1 for item in expanded.conversation_input if isinstance(item, dict))  # as `normalised` keeps them
    sent, output = added[:count], added[count:]
    base = resume.walked if isinstance(resume.walked, Walked) else None
    if base is None:  # the request was walked whole: the conversation's items are walked again, once
        items, later = expanded.conversation_read or (b"", ())
        sent = [*json.loads(b"[" + b",".join(part for part in (items, *later) if part) + b"]"), *sent]
    try:
        _, parser = parse_continuing({"model": model, "input": sent}, base)
    except ErrorResponse:
        return None
    walked = walk_answer(parser, output)
    if walked is None:
        return None
    chain = (resume.chain_bytes if base is not None else expanded.conversation_bytes) + len(appended) + 1
    return ContinuationState(walked, resume.out, chain)
