"""What the one-pass request walks (`openai_chat._fast`, `anthropic._fast`, `gemini._fast`) build and
test in common: the neutral message and conversation, made without their constructors' checks, and
the test of a name or id that passes each provider's pattern without running it.

Why: a request's walk builds a `Message` per turn, a `Tool` per tool and one `Conversation`, and tests a name or id per
tool and call; made through their frozen constructors or `assembled`'s keywords, and tested by a
regex, those are a third of the walk. Touches only the values it is handed.
"""

from __future__ import annotations

from typing import Any, TypeVar

from ..messages._types import Message, Part, Role, Text, Tool, wire_result, wire_text
from ._base import Conversation

__all__ = [
    "plain_name",
    "result_message",
    "text_message",
    "text_part",
    "walked_request",
    "walked_message",
    "walked_tool",
]

_new = object.__new__


def walked_message(role: Role, parts: tuple[Part, ...]) -> Message:
    """`wire_message(role, parts)`, without its fallback to `Message`'s checks for reasoning outside the
    model's turn: each walk puts reasoning in the model's turns only (it declines the rest)."""
    message = _new(Message)
    fields = message.__dict__  # set item by item: a third of the cost of `update(role=..., content=...)`
    fields["role"] = role
    fields["content"] = parts
    return message


_SAME: dict[tuple[str, ...] | tuple[str, str, bool], Message] = {}
"""Messages of text alone and tool results made before, by their role and text (a result: its call id,
content and error flag). A client sends its history again with every request, so most of a request's
turns were read before; such a message holds only strings, so one object serves every request that
sends it, and no answer can tell it from a new one."""
_TEXTS: dict[str, Text] = {}
"""Text parts made before, by their text: the prose of the model's turns sent back, for the same reason."""
SAME_AT_MOST = 4096
"""Entries `_SAME` and `_TEXTS` each hold; full, one starts again empty."""
SAME_LONGEST = 4096
"""The longest text or result either keeps (characters): a longer one is made anew each time, so the
two hold at most about 32 MiB whatever the requests."""
_K = TypeVar("_K")
_V = TypeVar("_V")


def text_part(text: str) -> Text:
    """`Text(text)`, the same object each time it is sent."""
    part = _TEXTS.get(text)
    if part is None:
        part = wire_text(text)
        _keep(_TEXTS, text, part, text)
    return part


def text_message(role: Role, text: str) -> Message:
    """`walked_message(role, (Text(text),))`: a turn of one text, the same object each time it is sent."""
    key = (role, text)
    message = _SAME.get(key)
    if message is None:
        message = walked_message(role, (text_part(text),))
        _keep(_SAME, key, message, text)
    return message


def result_message(call_id: str, content: str, is_error: bool) -> Message:
    """`walked_message("tool", (ToolResult(call_id, content, is_error),))`, the same object each time."""
    key = (call_id, content, is_error)
    message = _SAME.get(key)
    if message is None:
        message = walked_message("tool", (wire_result(call_id, content, is_error),))
        _keep(_SAME, key, message, content)
    return message


def _keep(memo: dict[_K, _V], key: _K, made: _V, text: str) -> None:
    if len(text) <= SAME_LONGEST:
        if len(memo) >= SAME_AT_MOST:
            memo.clear()
        memo[key] = made


def walked_tool(name: str, description: str, parameters: dict[str, Any]) -> Tool:
    """`Tool(name, description, parameters)`, set field by field."""
    tool = _new(Tool)
    fields = tool.__dict__
    fields["name"] = name
    fields["description"] = description
    fields["parameters"] = parameters
    return tool


def walked_request(
    model: str,
    messages: list[Message],
    paths: list[str],
    tools: list[Tool],
    tool_choice: str | None,
    stream: bool,
    raw: dict[str, Any],
) -> Conversation:
    """`Conversation(...)` of a provider's own API (no cloud), set field by field: `assembled`'s keywords
    cost two thirds more."""
    conversation = _new(Conversation)
    fields = conversation.__dict__
    fields["model"] = model
    fields["messages"] = messages
    fields["paths"] = paths
    fields["tools"] = tools
    fields["tool_choice"] = tool_choice
    fields["stream"] = stream
    fields["raw"] = raw
    fields["cloud"] = None
    return conversation


def plain_name(text: str, most: int) -> bool:
    """An ASCII identifier (`[A-Za-z_][A-Za-z0-9_]*`) of at most `most` characters: a name or id that
    each provider's pattern of that length takes, told by two string methods instead of a regex.
    False says only "ask the pattern": a dash, a dot or a leading digit may pass it too."""
    return len(text) <= most and text.isascii() and text.isidentifier()
