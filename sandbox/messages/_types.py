"""The skyl data model: one neutral shape for every provider.

A conversation is a list of `Message`s. Each message has a role and a list of content parts:
`Text`, `ToolCall` and `Reasoning` (assistant only) and `ToolResult` (one per `tool` message). The wire-format
modules translate this model to and from each provider's JSON, in both directions, so the same
types serve the learner's client and the fake provider.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal

from .._exceptions import UsageError

__all__ = [
    "Message",
    "Part",
    "Reasoning",
    "Request",
    "Response",
    "Role",
    "StopReason",
    "Text",
    "Tool",
    "ToolCall",
    "ToolResult",
    "Usage",
    "assistant_text",
    "system_text",
    "tool_result_message",
    "user_text",
]

_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""`json.dumps(data, ensure_ascii=False, separators=(",", ":"))`, without a new encoder per call."""

Role = Literal["system", "user", "assistant", "tool"]
_ROLES = ("system", "user", "assistant", "tool")


class StopReason(str, enum.Enum):
    """Why the model stopped. The call list, not this, is the reliable end-of-loop signal."""

    END_TURN = "end_turn"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    STOP_SEQUENCE = "stop_sequence"
    REFUSAL = "refusal"
    OTHER = "other"

    def __repr__(self) -> str:
        return f"StopReason.{self.name}"


@dataclass(frozen=True)
class Text:
    """A piece of prose in a message."""

    text: str
    kind: Literal["text"] = field(default="text", repr=False)


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for. `arguments` is already decoded from the provider's JSON."""

    id: str
    """The provider's id for this call; a tool result answers it with the same id."""
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    kind: Literal["tool_call"] = field(default="tool_call", repr=False)
    meta: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """Provider details a replay needs (an OpenAI Responses item id, a Gemini thought signature)."""

    def __post_init__(self) -> None:
        if type(self.arguments) is not dict and not isinstance(self.arguments, Mapping):
            raise UsageError(
                f"ToolCall arguments must be a dict, got {type(self.arguments).__name__}: {self.arguments!r}. "
                "Decode the provider's JSON string with json.loads first."
            )


@dataclass(frozen=True)
class ToolResult:
    """The answer to one tool call, paired with it by `call_id`."""

    call_id: str
    content: str
    is_error: bool = False
    kind: Literal["tool_result"] = field(default="tool_result", repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.call_id, str):
            raise UsageError(f"A tool result's call_id must be the call's id string (call.id), got {self.call_id!r}.")
        if not isinstance(self.content, str):
            raise UsageError(
                f"A tool result's content must be a string, got {type(self.content).__name__}: "
                f"{self.content!r:.80}. Providers accept text: json.dumps() structured results, str() others."
            )


@dataclass(frozen=True)
class Reasoning:
    """What a reasoning model thought before it acted, exactly as its provider sent it.

    OpenAI Responses sends `reasoning` items, Anthropic `thinking` (and `redacted_thinking`) blocks,
    Gemini a `thoughtSignature` on the turn's first call. Each provider wants them back, unchanged
    and in place, with the calls they led to, and refuses the next request without them. Read
    `summary`; never build one: only a response makes them (`resp.message` carries them), and the
    provider checks their signatures. Chat Completions sends none.
    """

    provider: str
    """The wire format that sent it (`openai-responses`, `anthropic`, `gemini`): it goes back only there."""
    summary: str = ""
    """The readable part, where the provider shows one (a thinking block's text, a reasoning summary);
    empty when the reasoning is hidden (redacted thinking, a Gemini signature)."""
    _: KW_ONLY
    redacted: bool = False
    """True when the provider hid the reasoning entirely (Anthropic `redacted_thinking`)."""
    payload: str = field(default="", repr=False)
    """The provider's item, block or signature as compact JSON, exactly as received: what goes back."""
    kind: Literal["reasoning"] = field(default="reasoning", repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.provider, str) or not self.provider:
            raise UsageError(f"Reasoning provider={self.provider!r}: name the wire format that sent it.")
        if not isinstance(self.summary, str):
            raise UsageError(f"Reasoning summary must be a string, got {type(self.summary).__name__}.")
        try:
            data = json.loads(self.payload) if isinstance(self.payload, str) and self.payload else None
        except ValueError:
            data = None
        if not isinstance(data, dict) or not data:
            raise UsageError(
                "A Reasoning part holds what a provider sent (payload=), and a provider only accepts its own "
                "back. Keep the parts of resp.message (or the ReasoningEnd events of a stream) instead of "
                "writing one: append resp.message itself."
            )

    def data(self) -> dict[str, Any]:
        """A fresh copy of the provider's JSON: what the wire format sends back."""
        value: dict[str, Any] = json.loads(self.payload)
        return value

    @classmethod
    def from_wire(
        cls, provider: str, data: Mapping[str, Any], *, summary: str = "", redacted: bool = False
    ) -> Reasoning:
        """The part for a provider's JSON (wire formats use this when they decode a response, and the
        fake when it reads a request's reasoning: a reasoning model's history holds one per turn or
        more)."""
        return cls(provider, summary, redacted=redacted, payload=_COMPACT.encode(data))


Part = Text | ToolCall | ToolResult | Reasoning


@dataclass(frozen=True)
class Message:
    """One turn of the conversation: a role and its content parts, in order."""

    role: Role
    content: Sequence[Part] = ()

    def __post_init__(self) -> None:
        if self.role not in _ROLES:
            raise UsageError(f"Message role={self.role!r}; use one of {', '.join(map(repr, _ROLES))}.")
        content = (Text(self.content),) if isinstance(self.content, str) else tuple(self.content)
        for part in content:
            if not isinstance(part, (Text, ToolCall, ToolResult, Reasoning)):
                raise UsageError(
                    f"Message content holds parts (skyl.Text, skyl.ToolCall, skyl.ToolResult, skyl.Reasoning), "
                    f"got {type(part).__name__}: {part!r:.80}. For plain text, pass a string or use skyl.user_text()."
                )
            if isinstance(part, Reasoning) and self.role != "assistant":
                raise UsageError(
                    f"A {self.role} message cannot hold reasoning: only the model's own turn (resp.message) has it."
                )
        # A tuple keeps the turn exactly as the provider sent it, even if someone holds a reference.
        object.__setattr__(self, "content", content)

    def text(self) -> str:
        """All text parts joined: what a person would read."""
        return "".join(part.text for part in self.content if isinstance(part, Text))

    def tool_calls(self) -> list[ToolCall]:
        """The calls in this turn, in the order the model made them."""
        calls: list[ToolCall] = []
        for part in self.content:
            if isinstance(part, ToolCall):
                calls.append(part)
        return calls

    def tool_results(self) -> list[ToolResult]:
        results: list[ToolResult] = []
        for part in self.content:
            if isinstance(part, ToolResult):
                results.append(part)
        return results

    def reasoning(self) -> list[Reasoning]:
        """The model's reasoning parts, in order: they go back with the turn, never on their own."""
        parts: list[Reasoning] = []
        for part in self.content:
            if isinstance(part, Reasoning):
                parts.append(part)
        return parts


@dataclass(frozen=True)
class Tool:
    """A tool the model may call; `parameters` is a JSON Schema object."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


ToolChoice = Literal["auto", "none", "required"] | str
"""`"auto"`, `"none"`, `"required"` (any tool), or a tool's name to force that tool."""


@dataclass
class Request:
    """What the loop sends each round. `messages` is a plain list: the loop appends to it."""

    model: str
    messages: list[Message] = field(default_factory=list)
    _: KW_ONLY
    tools: Sequence[Tool] = ()
    tool_choice: ToolChoice | None = None
    max_tokens: int = 1024
    system: str | None = None
    temperature: float | None = None
    stop_sequences: Sequence[str] = ()
    reasoning: bool = False
    """Ask a reasoning model to show its reasoning: Anthropic `thinking` on, Responses reasoning
    summaries (Gemini 3 signs its turns either way; Chat Completions shows none). Whatever reasoning
    a response carries must go back with its turn."""

    def __post_init__(self) -> None:
        if not isinstance(self.messages, list):
            self.messages = list(self.messages)  # a tuple or generator: the loop must be able to append
        self.check()

    def check(self) -> None:
        """Raise `UsageError` naming the first field a provider could not be sent."""
        if not isinstance(self.model, str) or not self.model:
            raise UsageError(f"Request model={self.model!r}: name the model (in the sandbox, the scenario).")
        if not isinstance(self.messages, list):
            raise UsageError(f"req.messages must be a list of skyl.Message, got {type(self.messages).__name__}.")
        for index, message in enumerate(self.messages):
            if not isinstance(message, Message):
                raise UsageError(
                    f"req.messages[{index}] is a {type(message).__name__}: {message!r:.80}. Append skyl.Message "
                    "objects: resp.message, skyl.tool_result_message(call.id, text), skyl.user_text(text)."
                )
        for tool in self.tools:
            if not isinstance(tool, Tool):
                raise UsageError(f"Request tools must be skyl.Tool objects, got {type(tool).__name__}: {tool!r:.80}.")


@dataclass(frozen=True)
class Response:
    """One model turn as the provider sent it."""

    message: Message
    """The assistant turn, tool calls included: append this, never a reconstruction."""
    stop_reason: StopReason
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    id: str = ""
    raw: Any = field(default=None, repr=False, compare=False)
    """The decoded provider JSON (for a stream: the list of decoded events)."""

    def text(self) -> str:
        return self.message.text()

    def tool_calls(self) -> list[ToolCall]:
        """Empty when the model is done: the loop's terminating condition."""
        return self.message.tool_calls()


def user_text(text: str) -> Message:
    return Message("user", [Text(text)])


def system_text(text: str) -> Message:
    return Message("system", [Text(text)])


def assistant_text(text: str) -> Message:
    """An assistant turn holding only prose.

    This is the lesson's DON'T: appending `assistant_text(resp.text())` instead of `resp.message`
    drops the tool calls, and the provider then rejects the results that follow. It exists so that
    learners can make the mistake and see the real error.
    """
    return Message("assistant", [Text(text)])


def tool_result_message(call_id: str, content: str, *, is_error: bool = False) -> Message:
    """The answer to one call. Append one per call, after the assistant turn that made them."""
    return Message("tool", [ToolResult(call_id, content, is_error)])
