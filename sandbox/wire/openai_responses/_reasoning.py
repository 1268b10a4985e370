"""Reasoning items of the OpenAI Responses API, on both sides of the wire, and their echo rules.

A reasoning model's output starts with a `reasoning` item (`rs_...`): a summary when the request
asks for one (`reasoning.summary`), and `encrypted_content`, which the openai 3.57 SDK documents as
"populated by default for reasoning items returned by `POST /v1/responses`"
(`ResponseReasoningItem.encrypted_content`). The items that follow it (`function_call`s, a
`message`) are linked to it: sent back without it, the API refuses them; it sent back without them,
likewise. A stream announces the item with `response.output_item.added`, streams its summary with
`response.reasoning_summary_part.added` / `response.reasoning_summary_text.delta` / `.done` /
`response.reasoning_summary_part.done`, and completes it in `response.output_item.done` (the SDK's
event types in `openai/types/responses/response_reasoning_summary_*`).

Touches only reasoning items and the request's `reasoning` setting; the signatures are `.._reasoning`'s.
Sources for the texts: [ISSUE] quoted verbatim, with status, type, param and code, in the named
public issue; [INF] no public capture found.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...messages._events import ReasoningDelta, ReasoningEnd, StreamEvent
from ...messages._types import Message, Reasoning, ToolCall
from .._base import CREATED_AT, Conversation, ErrorResponse, Rule, split_fragments
from .._reasoning import opaque_bytes, reasoning_tokens
from ._ids import item_id_for
from ._validate import wire_error

__all__ = ["PROVIDER", "ReasoningStream", "check_echo", "decode_item", "reasoning_item", "stream_item"]

PROVIDER = "openai-responses"
_SUMMARIES = ("auto", "concise", "detailed")
_TURN_ITEMS = ("message", "function_call", "reasoning")
_STORE_FALSE_HINT = (
    " Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this "
    "item from your input."
)  # [ISSUE] can1357/oh-my-pi#41 (404), continuing "Item with id 'rs_...' not found."


def _summary_requested(conversation: Conversation) -> bool:
    reasoning = conversation.raw.get("reasoning")
    if not isinstance(reasoning, Mapping):
        return False
    return reasoning.get("summary") in _SUMMARIES or reasoning.get("generate_summary") in _SUMMARIES


def reasoning_item(seed: str, thought: str, conversation: Conversation) -> Reasoning:
    """The reasoning item the fake sends first in turn `seed`: its id and encrypted content are
    signed for that turn, so the echo check can tell it from any other."""
    item_id = item_id_for("rs", seed, "reasoning")
    summary = [{"type": "summary_text", "text": thought}] if _summary_requested(conversation) else []
    item = {
        "id": item_id,
        "type": "reasoning",
        "summary": summary,
        "encrypted_content": _encrypted_content(seed, item_id, reasoning_tokens(thought)),
    }
    return Reasoning.from_wire(PROVIDER, item, summary=thought if summary else "")


def _encrypted_content(seed: str, item_id: str, tokens: int) -> str:
    """A Fernet token, as the real one is: version byte 0x80, the timestamp, a 16-byte IV, the
    ciphertext in 16-byte blocks and a 32-byte HMAC, URL-safe base64 (`gAAAAAB...`). The ciphertext
    grows with the reasoning, 1,024 + 4 bytes a token: about 1,600 characters for a short thought,
    where the recordings carry 1,100-1,800 (vercel/ai `openai-reasoning-encrypted-content.1.chunks.txt`)
    and about 12,000 for 2,000 reasoning tokens (pydantic-ai `test_openai_responses_model_thinking_part.yaml`)."""
    ciphertext = -(-(1024 + 4 * tokens) // 16) * 16
    body = opaque_bytes(seed, 0, item_id, 16 + ciphertext + 32)
    token = b"\x80" + CREATED_AT.to_bytes(8, "big") + body
    return base64.urlsafe_b64encode(token).decode("ascii")


def decode_item(item: Mapping[str, Any]) -> Reasoning:
    """A `reasoning` output item as a skyl part, kept whole for the next request."""
    texts = [
        part["text"]
        for part in item.get("summary") or []
        if isinstance(part, Mapping) and isinstance(part.get("text"), str)
    ]
    return Reasoning.from_wire(PROVIDER, item, summary="\n\n".join(texts))


def stream_item(emit: Callable[..., None], index: int, item: dict[str, Any]) -> None:
    """A reasoning item's stream events, in the order the SDK's stream accumulator expects."""
    emit("response.output_item.added", output_index=index, item={**item, "summary": []})
    for summary_index, part in enumerate(item["summary"]):
        ids = {"item_id": item["id"], "output_index": index, "summary_index": summary_index}
        emit("response.reasoning_summary_part.added", **ids, part={"type": "summary_text", "text": ""})
        for fragment in split_fragments(part["text"]):
            emit("response.reasoning_summary_text.delta", **ids, delta=fragment)
        emit("response.reasoning_summary_text.done", **ids, text=part["text"])
        emit("response.reasoning_summary_part.done", **ids, part=part)
    emit("response.output_item.done", output_index=index, item=item)


class ReasoningStream:
    """Client side: turns a stream's reasoning events into `ReasoningDelta`s and `ReasoningEnd`."""

    def __init__(self) -> None:
        self._index: dict[int, int] = {}
        """output_index -> the reasoning part's index within the turn."""

    def added(self, output_index: int) -> list[StreamEvent]:
        self._index.setdefault(output_index, len(self._index))
        return []

    def delta(self, data: Mapping[str, Any]) -> list[StreamEvent]:
        """A summary fragment, for display: one that names no known item is skipped, not fatal."""
        output_index = data.get("output_index")
        index = self._index.get(output_index) if isinstance(output_index, int) else None
        text = data.get("delta")
        return [ReasoningDelta(index, text)] if index is not None and isinstance(text, str) and text else []

    def done(self, output_index: int, item: Mapping[str, Any]) -> list[StreamEvent]:
        index = self._index.setdefault(output_index, len(self._index))
        return [ReasoningEnd(index, decode_item(item))]


# -- the echo rules (fake side) -------------------------------------------------------------------------


def check_echo(conversation: Conversation, index: int, expected: Sequence[Reasoning]) -> None:
    """The echoed assistant turn `index` against the reasoning the fake sent with it."""
    message = conversation.messages[index]
    echoed = message.reasoning()
    if echoed and message.content[-1] is echoed[-1]:
        dangling = echoed[-1].data().get("id", "")
        raise wire_error(
            400,
            f"Item '{dangling}' of type 'reasoning' was provided without its required following item.",
            rule=Rule.REASONING_DROPPED,
            param="input",
            message_index=index,
        )  # [ISSUE] continuedev/continue#8933 (400, invalid_request_error, param input, code null)
    wanted = {part.data()["id"]: part for part in expected}
    for part in echoed:
        _check_issued(conversation, index, part, wanted)
    missing = [part for item_id, part in wanted.items() if all(got.data().get("id") != item_id for got in echoed)]
    if missing:
        raise _dropped(conversation, index, message, missing[0])


def _check_issued(conversation: Conversation, index: int, part: Reasoning, wanted: Mapping[str, Reasoning]) -> None:
    data = part.data()
    item_id = data.get("id")
    issued = wanted.get(item_id) if isinstance(item_id, str) else None
    content = data.get("encrypted_content")
    if isinstance(content, str) and (issued is None or content != issued.data().get("encrypted_content")):
        raise wire_error(
            400,
            f"The encrypted content for item {item_id} could not be verified. Reason: Encrypted content could "
            "not be decrypted or parsed.",
            rule=Rule.REASONING_INVALID,
            code="invalid_encrypted_content",
            message_index=index,
        )  # [ISSUE] smallmain/vscode-unify-chat-provider#178 (text); openai/codex#8145 (param null, code)
    if issued is None:
        store_false = conversation.raw.get("store") is False
        raise wire_error(
            404,
            f"Item with id '{item_id}' not found." + (_STORE_FALSE_HINT if store_false else ""),
            rule=Rule.REASONING_INVALID,
            param="input",
            message_index=index,
        )  # [ISSUE] can1357/oh-my-pi#41 with store false; without it, the first sentence alone is [INF]


def _dropped(conversation: Conversation, index: int, message: Message, missing: Reasoning) -> ErrorResponse:
    rs_id = missing.data()["id"]
    linked = _first_linked_item(conversation, index, message)
    if linked is not None:
        item_id, item_type = linked
        # [ISSUE] VRSEN/agency-swarm#367, mastra-ai/mastra#8738 (400, invalid_request_error, param input,
        # code null); with a message item first: continuedev/continue#12620.
        return wire_error(
            400,
            f"Item '{item_id}' of type '{item_type}' was provided without its required 'reasoning' item: '{rs_id}'.",
            rule=Rule.REASONING_DROPPED,
            param="input",
            message_index=index,
        )
    # Items without their ids cannot be linked to their reasoning, so the API takes them; the model
    # has lost what it thought, and the sandbox says so.
    return wire_error(
        400,
        f"sandbox: {conversation.paths[index]} is the model's turn without its reasoning item {rs_id}. The real API "
        "accepts items it cannot link to their reasoning, but the model then continues without what it thought. "
        "Append resp.message itself (with the openai SDK: every item of response.output), never a turn rebuilt "
        "from its calls.",
        rule=Rule.REASONING_DROPPED,
        param=conversation.paths[index],
        code="sandbox_reasoning_dropped",
        message_index=index,
    )


def _first_linked_item(conversation: Conversation, index: int, message: Message) -> tuple[str, str] | None:
    """The first item of the turn that carries the id the API links to its reasoning."""
    for item in _raw_items(conversation, index):
        if item.get("type", "message") != "reasoning" and isinstance(item.get("id"), str):
            return item["id"], str(item.get("type", "message"))
    for part in message.content:
        if isinstance(part, ToolCall) and isinstance(part.meta.get("item_id"), str):
            return part.meta["item_id"], "function_call"
    return None


def _raw_items(conversation: Conversation, index: int) -> list[Mapping[str, Any]]:
    """The input items that make up neutral message `index` (a run of assistant items)."""
    raw_input = conversation.raw.get("input")
    path = conversation.paths[index]
    if not isinstance(raw_input, list) or not path.startswith("input["):
        return []
    start = int(path[len("input[") : -1])
    items = []
    for item in raw_input[start:]:
        if not isinstance(item, Mapping) or item.get("type", "message") not in _TURN_ITEMS:
            break
        if item.get("type", "message") == "message" and item.get("role") != "assistant":
            break
        items.append(item)
    return items
