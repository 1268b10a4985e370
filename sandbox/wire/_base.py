"""The contract every wire format implements, on both sides of the wire.

Client side (the skyl client): `encode_request`, `decode_response`, `stream_decoder`, `decode_error`.
Fake side (the sandbox engine): `parse_request`, `encode_response`, `encode_stream`, `error`.

The same module serves both sides so that round trips are cheap to test; the official SDKs are the
independent judge that keeps a shape we get wrong on both sides from cancelling out.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import ProviderError
from ..messages._events import StreamEvent
from ..messages._types import Message, Reasoning, Request, Response, StopReason, Tool, Usage
from ._sse import SSEEvent, dumps, to_bytes

__all__ = [
    "CREATED_AT",
    "Conversation",
    "EncodedRequest",
    "ModelTurn",
    "Rule",
    "StreamDecoder",
    "ErrorResponse",
    "WireFormat",
    "seeded_token",
    "stable_token",
    "unique_token",
]

CREATED_AT = 1767225600
"""Every timestamp the fake sends (2026-01-01T00:00:00Z): output must be byte-identical across runs."""

_ALPHANUMERIC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
HEX = "0123456789abcdef"


def unique_token(seed: str, length: int, alphabet: str = _ALPHANUMERIC) -> str:
    """An id body of `length` characters of `alphabet` for a seed that holds an answer's identity (a
    response id, a request id: `answer_identity`), so no other answer has it: a BLAKE2s digest of the
    seed, `length` bytes long (half as many for hex, its hex digits), each byte one character of the
    alphabet by its value modulo the alphabet's size. The first 256 mod size characters come a little
    more often; an id must be unique and deterministic, not uniform. At most 32 characters (64 in hex)."""
    if alphabet == HEX:
        return hashlib.blake2s(seed.encode(), digest_size=(length + 1) // 2).hexdigest()[:length]
    return hashlib.blake2s(seed.encode(), digest_size=length).digest().translate(_by_byte(alphabet)).decode("ascii")


def seeded_token(seed: str, length: int, alphabet: str = _ALPHANUMERIC) -> str:
    """A deterministic id body derived from `seed`, in the alphabet a provider uses: the SHA-256 of the
    seed read as a big-endian number, written in base `len(alphabet)` from its lowest digit up.

    This is what the ids every conversation shares derive from (call and item ids, signatures, by
    scenario and step: `stable_token`), which scripts, recorded dialogues and learners' transcripts
    quote, so their derivation stays as it was. The conversion takes two digits at a time from a
    table (dividing by the base twice is dividing by its square), and the hex alphabet straight from
    the hex digest."""
    digest = hashlib.sha256(seed.encode()).digest()
    if alphabet == HEX:
        return (digest.hex()[::-1] + "0" * max(0, length - 64))[:length]
    number = int.from_bytes(digest, "big")
    pairs = _pairs(alphabet)
    square = len(pairs)
    chars = []
    for _ in range(length // 2):
        number, rem = divmod(number, square)
        chars.append(pairs[rem])
    if length % 2:
        chars.append(alphabet[number % len(alphabet)])
    return "".join(chars)


stable_token = functools.lru_cache(maxsize=4096)(seeded_token)
"""`seeded_token`, memoised: for the seeds many answers share (call and item ids, by scenario and step)."""


@functools.lru_cache(maxsize=8)
def _by_byte(alphabet: str) -> bytes:
    """The table `bytes.translate` writes a digest's bytes in `alphabet` with: byte b -> alphabet[b % size]."""
    return bytes(ord(alphabet[value % len(alphabet)]) for value in range(256))


@functools.lru_cache(maxsize=8)
def _pairs(alphabet: str) -> tuple[str, ...]:
    """Every two-digit string in `alphabet`, lowest digit first, indexed by its value."""
    return tuple(low + high for high in alphabet for low in alphabet)


BASE58 = _BASE58


class Rule(str, enum.Enum):
    """The kind of mistake an error reports, shared by every provider, so hints can be chosen by kind."""

    MALFORMED = "malformed"
    """The body is not JSON, a field has the wrong type, or a required field is missing."""
    RESULT_WITHOUT_TURN = "result_without_turn"
    """A tool result does not directly follow an assistant turn with tool calls (the turn is missing,
    was rebuilt as text, or the results came first)."""
    MISSING_RESULT = "missing_result"
    """An assistant turn's call has no result after it."""
    DUPLICATE_RESULT = "duplicate_result"
    DUPLICATE_TURN = "duplicate_turn"
    """The same assistant turn (the same call ids or item ids) appears twice in the history."""
    UNKNOWN_CALL_ID = "unknown_call_id"
    """A result answers an id that the turn before it did not call."""
    REASONING_DROPPED = "reasoning_dropped"
    """A reasoning model's turn came back without its reasoning (Responses reasoning items, Anthropic
    thinking blocks, Gemini thought signatures), or its reasoning came back without the rest of it."""
    REASONING_INVALID = "reasoning_invalid"
    """Reasoning the provider did not issue for that turn (edited, moved to another turn, written by
    hand), or thinking sent back while the request disables thinking."""
    HISTORY_MISMATCH = "history_mismatch"
    """Sandbox only: an echoed assistant turn is not the one the sandbox sent at that step."""
    SCRIPT_FINISHED = "script_finished"
    """Sandbox only: the scenario already gave its final answer."""
    NO_MATCHING_STEP = "no_matching_step"
    """Sandbox only: no step left to play meets the request (each step's `when`, a `respond` function)."""
    SCENARIO_ERROR = "scenario_error"
    """Sandbox only: the scenario's own code failed (a `when` predicate, a `respond` function)."""
    SCHEMA_MISMATCH = "schema_mismatch"
    """Sandbox only: a scripted structured answer does not fit the schema the request asks for."""
    BUDGET = "budget"
    """Sandbox only: the conversation used up its request budget (a runaway loop)."""
    MISSING_TOOL = "missing_tool"
    """Sandbox only: the scenario calls a tool that the request does not declare."""
    UNKNOWN_SCENARIO = "unknown_scenario"
    NOT_FOUND = "not_found"
    """Unknown path or method."""
    TOO_LARGE = "too_large"
    FAULT = "fault"
    """Sandbox only: a scripted fault (rate limit, overload, server error), not the loop's mistake."""


@dataclass(frozen=True)
class EncodedRequest:
    """Everything needed to send a request, relative to the provider's base URL."""

    path: str
    json: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    method: str = "POST"


@dataclass(frozen=True)
class Conversation:
    """A request as the fake provider understood it, in the neutral model."""

    model: str
    messages: list[Message]
    """One neutral message per turn; a provider turn holding several tool results becomes one
    `tool` message per result (in wire order), followed by a `user` message for any other parts."""
    paths: list[str]
    """For each neutral message, where it sits on the wire: `messages[3]`, `input[2]`,
    `contents[1]`. Several neutral messages may share one path."""
    tools: list[Tool] = field(default_factory=list)
    tool_choice: str | None = None
    """Normalised: None (not sent), `auto`, `none`, `required`, or a tool name."""
    stream: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    cloud: str | None = None
    """The cloud the request came through (`azure`, `vertex`; None: the provider's own API), whose
    front end words some errors its own way (see `sandbox.wire.clouds`)."""

    @property
    def forced_tool_choice(self) -> bool:
        return self.tool_choice not in (None, "auto", "none")


@dataclass(frozen=True)
class ModelTurn:
    """What the script answers: the assistant message plus how the provider would frame it."""

    message: Message
    stop_reason: StopReason
    seed: str
    """Unique per (scenario, step): response ids derive from it."""
    raw_stop_reason: str | None = None
    """A provider-specific stop value that overrides the faithful mapping (`stop`, `STOP`, ...)."""
    usage: Usage = field(default_factory=Usage)
    request: str = ""
    """The identity of the answer: the engine's number for the request after a checksum of it
    (`answer_identity`; empty outside the engine)."""
    reasoning_tokens: int = 0
    """The part of `usage.output_tokens` spent thinking: counted for a turn that carries reasoning."""

    @property
    def response_seed(self) -> str:
        """What a response's own id derives from: the step and the answer's identity (the request and
        the engine's number for it), so no two answers share one and a fresh engine answers the same
        requests with the same ids. State a provider keeps for its client (threads,
        `previous_response_id`) is found by that id, so it belongs to one sender and one answer.
        Gemini keeps no state and its `responseId` stays per step: the skyl client names Gemini's
        id-less calls after it, and a turn must read the same streamed or not."""
        return f"{self.seed}/{self.request}" if self.request else self.seed


class ErrorResponse(Exception):
    """A provider-shaped error response: exact status, headers and body."""

    def __init__(
        self,
        status: int,
        body: bytes,
        *,
        message: str,
        rule: Rule,
        headers: Mapping[str, str] | None = None,
        message_index: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.message = message
        """The provider's message text, verbatim."""
        self.rule = rule
        self.headers = dict(headers or {})
        self.message_index = message_index
        """The neutral message that broke the rule, when one did: the transcript marks it."""


class StreamDecoder(ABC):
    """Turns one provider's SSE events into skyl stream events, keeping whatever state it needs."""

    @abstractmethod
    def feed(self, event: SSEEvent) -> list[StreamEvent]:
        """Decode one SSE event. Raise `ProviderError` for an error event or unreadable data."""

    @abstractmethod
    def finish(self) -> list[StreamEvent]:
        """The stream ended. Raise `ProviderError` if it ended before the turn was complete."""


class WireFormat(ABC):
    """One provider's wire format."""

    name: str
    """`openai`, `openai-responses`, `anthropic` or `gemini`: the `provider=` a client names."""
    base_url: str
    """The real API's base URL, e.g. `https://api.openai.com/v1`."""
    has_call_ids: bool = True
    """Gemini sends no call ids: calls and results are paired by position in the turn."""

    # -- client side -------------------------------------------------------------------------

    @abstractmethod
    def encode_request(self, request: Request, *, stream: bool, api_key: str | None) -> EncodedRequest:
        """The provider's exact request for `request`. Neutral tool messages are merged where the
        provider wants them in one turn (Anthropic, Gemini)."""

    @abstractmethod
    def decode_response(self, data: Any) -> Response:
        """A decoded success body as a `Response`; `ProviderError` if it is not the documented shape."""

    @abstractmethod
    def stream_decoder(self) -> StreamDecoder: ...

    error_kind_key: str = "type"
    """The key of the error envelope that names the kind of error (Gemini: `status`)."""

    def decode_error(self, status: int, body: bytes) -> ProviderError:
        """The provider's error body as a `ProviderError` with the message verbatim."""
        return error_from_body(self.name, status, body, kind_key=self.error_kind_key)

    # -- fake side -----------------------------------------------------------------------------

    @abstractmethod
    def parse_request(self, body: bytes, *, path_model: str | None, path_stream: bool) -> Conversation:
        """Validate a request the way the real provider does and return it in the neutral model.

        `body` is the raw request body (any bytes: decoding and checking it is this method's job).
        `path_model` and `path_stream` come from the URL where the provider puts them there
        (Gemini). Raise `ErrorResponse`
        with the provider's exact status and text for the first violation, schema checks first, then
        the ordering and pairing rules.
        """

    @abstractmethod
    def call_id(self, seed: str) -> str:
        """A deterministic call id in the provider's format (Gemini: a position-based placeholder)."""

    @abstractmethod
    def encode_response(self, turn: ModelTurn, conversation: Conversation) -> dict[str, Any]: ...

    @abstractmethod
    def encode_stream(self, turn: ModelTurn, conversation: Conversation) -> list[bytes]:
        """The turn as SSE frames, deterministically chunked; arguments split over many fragments."""

    def encode_answer(self, turn: ModelTurn, conversation: Conversation) -> tuple[bytes, Mapping[str, Any] | None]:
        """A plain answer's body, `encode_response`'s object as `dumps` writes it, and that object, which
        kept state reads (`KeptState.keep`: its `id`, and a Responses answer's `output` or an Anthropic
        one's `content`)."""
        response = self.encode_response(turn, conversation)
        return to_bytes(dumps(response)), response

    def encode_stream_answer(
        self, turn: ModelTurn, conversation: Conversation
    ) -> tuple[list[bytes], dict[str, Any] | None]:
        """`encode_stream`'s frames, and the response object they were made from where the format makes
        one (a Responses stream sends its response whole): what kept state stores, encoded once."""
        return self.encode_stream(turn, conversation), None

    @abstractmethod
    def error(
        self,
        status: int,
        message: str,
        *,
        rule: Rule,
        param: str | None = None,
        code: str | None = None,
        message_index: int | None = None,
    ) -> ErrorResponse:
        """An `ErrorResponse` in this provider's error envelope."""

    media_type: str = "application/json"
    """The `content-type` of a JSON answer, as the real API spells it."""
    stream_media_type: str = "text/event-stream"

    def request_headers(self, request_digest: str) -> dict[str, str]:
        """The headers every real answer of this provider carries, success or error, beyond the content
        type: its request id, which the official SDKs expose as `_request_id`. `request_digest` (hex)
        is unique to the request, so the id is deterministic and two requests never share one."""
        return {}

    def answer_headers(self, request_digest: str, *, stream: bool) -> dict[str, str]:
        """The headers a successful answer carries beyond `request_headers`, streamed or not
        (Gemini's front end adds its own)."""
        return {}

    def identified_error_body(self, error: ErrorResponse, request_digest: str) -> bytes:
        """`error.body` as it goes out for the request `request_digest`: a provider that repeats its
        request id inside the error body (Anthropic) puts the request's own id there."""
        return error.body

    # -- reasoning (fake side; a scenario that plays a reasoning model) -------------------------

    def reasoning_parts(
        self, seed: str, thought: str, conversation: Conversation, *, redacted: bool, acting: bool
    ) -> list[Reasoning]:
        """The reasoning this provider sends before the rest of turn `seed` of a reasoning scenario,
        given what the model `thought` (`acting`: the turn calls tools); none where the provider sends
        none (Chat Completions) or the request did not ask for it."""
        return []

    def check_reasoning(
        self, conversation: Conversation, index: int, expected: Sequence[Reasoning], *, last: bool
    ) -> None:
        """Raise the provider's error when the echoed assistant turn `index` dropped, moved or
        changed the reasoning sent with it (`expected`, empty for a turn without reasoning).
        `last`: it is the history's final assistant turn. Formats without reasoning check nothing:
        Chat Completions has no reasoning echo rule."""
        return None


def error_from_body(provider: str, status: int, body: bytes, *, kind_key: str = "type") -> ProviderError:
    """A provider's `{"error": {"message": ..., <kind_key>: ...}}` as a `ProviderError` with the message
    verbatim; any other body (a proxy's HTML page, plain text) is kept whole as the message."""
    text = body.decode("utf-8", errors="replace")
    try:
        data: Any = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    if isinstance(data, list) and len(data) == 1:
        data = data[0]  # Gemini's alt=json stream wraps its error in an array
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        kind = error.get(kind_key)
        return ProviderError(
            error["message"],
            status=status,
            provider=provider,
            error_type=kind if isinstance(kind, str) else "",
            body=data,
        )
    message = text.strip() or f"HTTP {status} with an empty body"
    return ProviderError(message, status=status, provider=provider, body=text if data is None else data)


MAX_FRAGMENTS = 64
"""Streamed text or arguments never take more deltas than this: a long quoted tool result is sent in
larger pieces, so a stream's frame count and bytes stay proportional to the request, not 4 characters
a frame (a 4 MB result once became a million frames and 256 MB on the wire)."""


def split_fragments(text: str, size: int = 4) -> list[str]:
    """Deterministic chunking for streamed text and arguments: many small fragments, like the
    recorded streams, so that a loop that handles only one fragment per call is caught; at most
    `MAX_FRAGMENTS` of them, however long the text."""
    if not text:
        return []
    size = max(size, -(-len(text) // MAX_FRAGMENTS))
    return [text[i : i + size] for i in range(0, len(text), size)]


def tool_names(tools: Sequence[Tool]) -> list[str]:
    return [tool.name for tool in tools]
