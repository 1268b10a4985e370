"""Gemini thought signatures, on both sides of the wire, and their echo rule.

Gemini 3 thinks before every turn and puts a `thoughtSignature` (base64 bytes) beside the FIRST
`functionCall` part of a turn that calls tools; only that part of a parallel group carries one.
Streamed, the signature rides on the chunk that carries the calls, which has no `finishReason`; a
trailing chunk with an empty text part carries `"finishReason": "STOP"` (pydantic-ai cassette
`test_google/test_google_streaming_tool_call_thought_signature.yaml`, gemini-3-pro-preview). With
`thinkingConfig.includeThoughts`, thought summaries arrive first, as `{"text": ..., "thought": true}`
parts (`types.Part.thought` in google-genai). In skyl, a signature is a `Reasoning` part placed before
the part that carried it, and goes back on that part: a turn rebuilt from its calls loses it.

Touches only thought parts and their signatures (made by `.._reasoning`).
Sources for the texts: [ISSUE] quoted verbatim in the named public issue; [INF] no capture found.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...messages._events import ReasoningDelta, ReasoningEnd, StreamEvent
from ...messages._types import Part, Reasoning, ToolCall
from .._base import Conversation, Rule
from .._reasoning import length_prefixed, opaque_bytes, reasoning_tokens, same_base64

__all__ = [
    "PROVIDER",
    "check_echo",
    "encode_parts",
    "is_thought",
    "reasoning_events",
    "reasoning_parts",
    "wire_reasoning",
]

PROVIDER = "gemini"
_SKIP = "skip_thought_signature_validator"
"""The documented escape hatch: the API takes it in place of a signature (reference G4)."""


def reasoning_parts(seed: str, thought: str, conversation: Conversation, *, acting: bool) -> list[Reasoning]:
    """What the fake sends with turn `seed`: a thought summary when the request includes thoughts,
    and the signature it puts on the first call of a turn that calls tools."""
    parts = []
    if _includes_thoughts(conversation.raw):
        parts.append(Reasoning.from_wire(PROVIDER, {"text": thought, "thought": True}, summary=thought))
    if acting:
        parts.append(Reasoning.from_wire(PROVIDER, {"thoughtSignature": _thought_signature(seed, thought)}))
    return parts


def _thought_signature(seed: str, thought: str) -> str:
    """Base64 of the structure real signatures have (the cassette above: field 2 holding field 1,
    both with a valid length, the payload opening with 0x01): 560 + 4 bytes a reasoning token, about
    800 characters for a short thought, where the recordings carry 644 to 1,424
    (`test_google_instructions_only_with_tool_calls.yaml`)."""
    payload = b"\x01" + opaque_bytes(seed, 0, thought, 559 + 4 * reasoning_tokens(thought))
    return base64.b64encode(length_prefixed(2, length_prefixed(1, payload))).decode("ascii")


def _includes_thoughts(body: Mapping[str, Any]) -> bool:
    """`generationConfig.thinkingConfig.includeThoughts`, in either spelling the API accepts."""
    config = body.get("generationConfig", body.get("generation_config"))
    if not isinstance(config, Mapping):
        return False
    thinking = config.get("thinkingConfig", config.get("thinking_config"))
    if not isinstance(thinking, Mapping):
        return False
    return thinking.get("includeThoughts", thinking.get("include_thoughts")) is True


def is_thought(part: Reasoning) -> bool:
    """A thought summary part (it travels as a part of its own), not a signature."""
    return not _signature_only(part.data())


def _signature_only(data: Mapping[str, Any]) -> bool:
    return set(data) == {"thoughtSignature"}


def encode_parts(content: Sequence[Part], encode: Callable[[Part], dict[str, Any] | None]) -> list[dict[str, Any]]:
    """A turn's parts as Gemini parts: each signature goes back on the first call after it (or, in a
    turn without calls, on the next part), each thought part as it came."""
    parts: list[dict[str, Any]] = []
    pending: str | None = None
    for position, part in enumerate(content):
        if isinstance(part, Reasoning):
            data = part.data()
            if _signature_only(data):
                pending = data["thoughtSignature"]
            else:
                parts.append(data)
            continue
        encoded = encode(part)
        if encoded is None:
            continue
        if pending is not None and (
            isinstance(part, ToolCall) or not any(isinstance(later, ToolCall) for later in content[position + 1 :])
        ):  # the look ahead only while a signature waits: most turns carry none
            encoded["thoughtSignature"] = pending
            pending = None
        parts.append(encoded)
    if pending is not None:
        if parts:
            parts[-1]["thoughtSignature"] = pending
        else:
            parts.append({"text": "", "thoughtSignature": pending})
    return parts


def wire_reasoning(part: Mapping[str, Any]) -> Reasoning | None:
    """The reasoning a response part carries: a thought part whole, or a signature on its own."""
    if part.get("thought") is True:
        text = part.get("text")
        return Reasoning.from_wire(PROVIDER, part, summary=text if isinstance(text, str) else "")
    signature_value = part.get("thoughtSignature")
    if isinstance(signature_value, str) and signature_value:
        return Reasoning.from_wire(PROVIDER, {"thoughtSignature": signature_value})
    return None


def reasoning_events(index: int, part: Reasoning) -> list[StreamEvent]:
    delta: list[StreamEvent] = [ReasoningDelta(index, part.summary)] if part.summary else []
    return [*delta, ReasoningEnd(index, part)]


# -- the echo rule (fake side) ----------------------------------------------------------------------------


def check_echo(conversation: Conversation, index: int, expected: Sequence[Reasoning], *, error: Any) -> None:
    """The model turn `index` of the current turn must carry the signature the fake gave its first call.
    `error` is the wire format's `error(status, message, rule=..., message_index=...)`."""
    if not expected:
        return  # no reasoning sent with that turn (most scenarios): no signature to find
    issued = [part.data()["thoughtSignature"] for part in expected if not is_thought(part)]
    if not issued or not _in_current_turn(conversation, index):
        return
    number, parts = _wire_parts(conversation, index)
    first_call = next((part for part in parts if isinstance(part.get("functionCall"), Mapping)), None)
    if first_call is None:
        return
    sent = first_call.get("thoughtSignature", first_call.get("thought_signature"))
    vertex = conversation.cloud == "vertex"
    if not isinstance(sent, str) or not sent:
        name = first_call["functionCall"].get("name")
        message = (
            f"Unable to submit request because function call `default_api:{name}` in the {number + 1}. content "
            "block is missing a `thought_signature`. Learn more: "
            "https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures"
        )  # [ISSUE] Vertex AI: pydantic/pydantic-ai#3881, google-gemini/gemini-cli#26639; the 1-based block is [INF]
        if not vertex:
            message = (
                "Function call is missing a thought_signature in functionCall parts. This is required for tools to "
                "work correctly, and missing thought_signature may lead to degraded model performance. Additional "
                f"data, function call `default_api:{name}` , position {number + 1}. Please refer to "
                "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
            )  # [ISSUE] lbjlaq/Antigravity-Manager#733, #2157; the 1-based position is [INF] (reference G4)
        raise error(400, message, rule=Rule.REASONING_DROPPED, message_index=index)
    if sent != _SKIP and not same_base64(sent, issued[0]):
        message = "Corrupted thought signature."  # [ISSUE] google-gemini/gemini-cli#13467, Antigravity-Manager#970
        if vertex:  # [ISSUE] decolua/9router#301, RooCodeInc/Roo-Code#11716 (the doubled full stop is Vertex's)
            message = (
                "Unable to submit request because Thought signature is not valid.. Learn more: "
                "https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini"
            )
        raise error(400, message, rule=Rule.REASONING_INVALID, message_index=index)


def _in_current_turn(conversation: Conversation, index: int) -> bool:
    """The API checks only the turns since the last user text: earlier ones may have lost theirs."""
    for message in conversation.messages[index + 1 :]:
        if message.role == "user" and message.text():
            return False
    return True


def _wire_parts(conversation: Conversation, index: int) -> tuple[int, list[Mapping[str, Any]]]:
    path = conversation.paths[index]
    number = int(path[len("contents[") : -1])
    contents = conversation.raw.get("contents")
    content = contents[number] if isinstance(contents, list) and number < len(contents) else None
    parts = content.get("parts") if isinstance(content, Mapping) else None
    return number, [part for part in parts if isinstance(part, Mapping)] if isinstance(parts, list) else []
