"""Anthropic thinking blocks, on both sides of the wire, and their echo rules.

With `thinking` enabled (`{"type": "enabled", "budget_tokens": N}` or `{"type": "adaptive"}`), a turn
starts with a `thinking` block (`thinking`, `signature`) and sometimes a `redacted_thinking` block
(`data`), before its text and `tool_use` blocks (anthropic 2.14 `ThinkingBlock`,
`RedactedThinkingBlock`: "pass them back exactly as received"). A stream opens a thinking block
with empty `thinking` and `signature`, sends `thinking_delta`s, then one `signature_delta` "just
before the block's `content_block_stop`" (`SignatureDelta`); a redacted block arrives whole in its
`content_block_start`.

Touches only thinking blocks and the request's `thinking` setting; the signatures are `.._reasoning`'s.
Sources for the texts: [ISSUE] quoted verbatim in the named public issue; [INF] no capture found.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from ...messages._events import ReasoningDelta, ReasoningEnd, StreamEvent
from ...messages._types import Reasoning
from .._base import Conversation, ErrorResponse, Rule
from .._reasoning import length_prefixed, opaque_bytes, reasoning_tokens
from ._body import Rejection

__all__ = [
    "PROVIDER",
    "check_echo",
    "check_final_turn",
    "decode_block",
    "stream_deltas",
    "stream_start",
    "thinking_blocks",
    "thinking_enabled",
]

PROVIDER = "anthropic"
_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
_THINKING_KINDS = ("thinking", "redacted_thinking")


def thinking_enabled(conversation: Conversation) -> bool:
    return _enabled(conversation.raw)


def _enabled(data: Mapping[str, Any]) -> bool:
    thinking = data.get("thinking")
    if thinking is None:
        return False  # most requests: without the ABC check below
    return isinstance(thinking, Mapping) and thinking.get("type") in ("enabled", "adaptive")


def thinking_blocks(seed: str, thought: str, conversation: Conversation, *, redacted: bool) -> list[Reasoning]:
    """What the fake sends first in turn `seed`, when the request enables thinking."""
    if not thinking_enabled(conversation):
        return []
    block = {"type": "thinking", "thinking": thought, "signature": _signature(seed, 0, thought)}
    parts = [Reasoning.from_wire(PROVIDER, block, summary=thought)]
    if redacted:
        hidden = {"type": "redacted_thinking", "data": _signature(seed, 1, "redacted")}
        parts.append(Reasoning.from_wire(PROVIDER, hidden, redacted=True))
    return parts


def _signature(seed: str, index: int, thought: str) -> str:
    """Base64 of the length-prefixed structure real signatures have (pydantic-ai
    `test_anthropic/test_anthropic_extended_thinking_with_tool_use.yaml`, claude-sonnet-4): field 2
    holding a 70-byte header, a 12- and a 12-byte nonce, a 48-byte key and the ciphertext, then
    field 3 = 1. The ciphertext grows with the thinking, 320 + 4 bytes a reasoning token, at most
    2,000: 628-2,900 characters, the recorded range."""
    size = min(2000, 320 + 4 * reasoning_tokens(thought))
    blob = opaque_bytes(seed, index, thought, 64 + 12 + 12 + 48 + size)
    header = b"\x08\x06\x18\x02" + length_prefixed(5, blob[:64])
    body = (
        length_prefixed(1, header)
        + length_prefixed(2, blob[64:76])
        + length_prefixed(3, blob[76:88])
        + length_prefixed(4, blob[88:136])
        + length_prefixed(5, blob[136:])
    )
    return base64.b64encode(length_prefixed(2, body) + b"\x18\x01").decode("ascii")


def decode_block(block: Mapping[str, Any]) -> Reasoning:
    """A `thinking` or `redacted_thinking` block as a skyl part, kept whole for the next request."""
    if block.get("type") == "redacted_thinking":
        return Reasoning.from_wire(PROVIDER, block, redacted=True)
    thinking = block.get("thinking")
    return Reasoning.from_wire(PROVIDER, block, summary=thinking if isinstance(thinking, str) else "")


def stream_start(block: Mapping[str, Any]) -> dict[str, Any]:
    """The `content_block` of a thinking block's `content_block_start`."""
    if block["type"] == "redacted_thinking":
        return dict(block)
    return {"type": "thinking", "thinking": "", "signature": ""}


def stream_deltas(block: Mapping[str, Any], fragments: Sequence[str]) -> list[dict[str, Any]]:
    """The `delta`s of a thinking block: its text in fragments, an empty `thinking_delta`, then its
    signature (pydantic-ai `test_anthropic/test_anthropic_model_thinking_part_stream.yaml`)."""
    if block["type"] == "redacted_thinking":
        return []
    deltas = [{"type": "thinking_delta", "thinking": piece} for piece in [*fragments, ""]]
    return [*deltas, {"type": "signature_delta", "signature": block["signature"]}]


class ThinkingStream:
    """Client side: one open thinking block of a stream, assembled for its `ReasoningEnd`."""

    def __init__(self, index: int, start: Mapping[str, Any]) -> None:
        self.index = index
        self.block = dict(start)

    def delta(self, delta: Mapping[str, Any]) -> list[StreamEvent]:
        if delta.get("type") == "thinking_delta" and isinstance(delta.get("thinking"), str):
            self.block["thinking"] = self.block.get("thinking", "") + delta["thinking"]
            return [ReasoningDelta(self.index, delta["thinking"])] if delta["thinking"] else []
        if delta.get("type") == "signature_delta" and isinstance(delta.get("signature"), str):
            self.block["signature"] = self.block.get("signature", "") + delta["signature"]
        return []

    def end(self) -> list[StreamEvent]:
        return [ReasoningEnd(self.index, decode_block(self.block))]


# -- the echo rules (fake side) -------------------------------------------------------------------------


def check_final_turn(data: Mapping[str, Any]) -> None:
    """The rules on the final assistant message, which need no script: they run before the tool
    pairing rules, as a block's type is checked before the turn's pairing. Raises `Rejection`."""
    messages = data.get("messages")
    turns = [
        (number, message["content"])
        for number, message in enumerate(messages if isinstance(messages, list) else [])
        if isinstance(message, Mapping)
        and message.get("role") == "assistant"
        and isinstance(message.get("content"), list)
    ]
    if not turns:
        return
    number, blocks = turns[-1]
    kinds = [block.get("type") if isinstance(block, Mapping) else None for block in blocks]
    enabled = _enabled(data)
    thinking = [position for position, kind in enumerate(kinds) if kind in _THINKING_KINDS]
    if thinking and not enabled:
        raise Rejection(
            f"messages.{number}.content.{thinking[0]}: When thinking is disabled, an `assistant` message in the "
            "final position cannot contain `thinking`. To use thinking blocks, enable `thinking` in your request.",
            Rule.REASONING_INVALID,
            message_index=number,
        )  # [ISSUE] tailcallhq/forgecode#1853; the whole text: a BerriAI/litellm fix's description
    if enabled and "tool_use" in kinds and kinds[0] not in _THINKING_KINDS:
        raise Rejection(
            f"messages.{number}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
            f"`{kinds[0]}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block "
            "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking "
            f"blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our "
            f"documentation at {_DOCS}",
            Rule.REASONING_DROPPED,
            message_index=number,
        )  # [ISSUE] Kilo-Org/kilocode#5219 (2026, this URL), anomalyco/opencode#3077; `text`: Antigravity-Manager#139


def check_echo(conversation: Conversation, index: int, expected: Sequence[Reasoning], *, error: Any) -> None:
    """The thinking blocks of echoed assistant turn `index` must be the ones the fake sent with it:
    the API verifies each signature. A turn that keeps some of them and leaves one out (a redacted
    block, say) gets the sandbox's own refusal, a `sandbox:` message that the faithful echo lets pass.
    `error` is the wire format's `error(status, message, rule=...)`.

    The reader (`_parse`) and a thread's kept turns make every thinking and redacted_thinking block of
    an assistant turn a `Reasoning` part of its neutral message, so a turn without one has no block
    to verify."""
    for part in conversation.messages[index].content:
        if type(part) is Reasoning:
            break
    else:
        return
    number, blocks = _wire_blocks(conversation, index)
    issued: set[tuple[Any, ...]] | None = None  # made at the first thinking block: most turns have none
    echoed: set[tuple[Any, ...]] = set()
    for position, block in enumerate(blocks):
        if block.get("type") in _THINKING_KINDS:
            if issued is None:
                issued = {_identity(part.data()) for part in expected}
            identity = _identity(block)
            if identity not in issued:
                raise _not_issued(error, number, position, block, index)
            echoed.add(identity)
    missing = [part for part in expected if _identity(part.data()) not in echoed]
    if echoed and missing:
        raise _partly_dropped(error, conversation, number, missing[0], index)


def _identity(block: Mapping[str, Any]) -> tuple[Any, ...]:
    """What the API verifies of a block: its text and signature, or its data (extra keys do not matter)."""
    if block.get("type") == "redacted_thinking":
        return ("redacted_thinking", block.get("data"))
    return ("thinking", block.get("thinking"), block.get("signature"))


def _not_issued(error: Any, number: int, position: int, block: Mapping[str, Any], index: int) -> ErrorResponse:
    if block.get("type") == "redacted_thinking":
        # [INF] no capture of a forged redacted block; worded like the thinking block's.
        message = f"messages.{number}.content.{position}: Invalid `data` in `redacted_thinking` block"
    else:
        # [ISSUE] ding113/claude-code-hub#518 (full body), lbjlaq/Antigravity-Manager#498
        message = f"messages.{number}.content.{position}: Invalid `signature` in `thinking` block"
    result: ErrorResponse = error(400, message, rule=Rule.REASONING_INVALID, message_index=index)
    return result


def _partly_dropped(
    error: Any, conversation: Conversation, number: int, missing: Reasoning, index: int
) -> ErrorResponse:
    """A turn that came back with some of its thinking blocks: the API verifies each block it is sent,
    and none is captured refusing a turn that left one out, so the refusal is the strict echo's."""
    kind = missing.data().get("type")
    result: ErrorResponse = error(
        400,
        f"sandbox: {conversation.paths[index]} is the model's turn without its `{kind}` block. Every thinking and "
        "redacted_thinking block goes back as it came, in its place: a redacted block is the model's reasoning too, "
        "encrypted. Append resp.message itself, or keep every Reasoning part a stream rebuilt, redacted ones "
        "included.",
        rule=Rule.REASONING_DROPPED,
        message_index=index,
    )
    return result


def _wire_blocks(conversation: Conversation, index: int) -> tuple[int, list[Mapping[str, Any]]]:
    """The request's `messages` entry behind neutral message `index`, and its content blocks."""
    path = conversation.paths[index]
    number = int(path[len("messages[") : -1])
    messages = conversation.raw.get("messages")
    content = messages[number].get("content") if isinstance(messages, list) else None
    if not isinstance(content, list):
        return number, [{"type": "text"}] if content else []
    return number, [block for block in content if type(block) is dict or isinstance(block, Mapping)]  # dict: fast
