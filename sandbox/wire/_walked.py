"""What the one-pass request walks (`openai_chat._fast`, `anthropic._fast`, `gemini._fast`) build and
test in common: the neutral message and conversation, made without their constructors' checks, and
the test of a name or id that passes each provider's pattern without running it.

Why: a request's walk builds a `Message` per turn, a `Tool` per tool and one `Conversation`, and tests a name or id per
tool and call; made through their frozen constructors or `assembled`'s keywords, and tested by a
regex, those are a third of the walk. Touches only the values it is handed.
"""

from __future__ import annotations

from typing import Any

from .._types import Message, Part, Role, Tool
from ._base import Conversation

__all__ = ["plain_name", "walked_conversation", "walked_message", "walked_tool"]

_new = object.__new__


def walked_message(role: Role, parts: tuple[Part, ...]) -> Message:
    """`wire_message(role, parts)`, without its fallback to `Message`'s checks for reasoning outside the
    model's turn: each walk puts reasoning in the model's turns only (it declines the rest)."""
    message = _new(Message)
    fields = message.__dict__  # set item by item: a third of the cost of `update(role=..., content=...)`
    fields["role"] = role
    fields["content"] = parts
    return message


def walked_tool(name: str, description: str, parameters: dict[str, Any]) -> Tool:
    """`Tool(name, description, parameters)`, set field by field."""
    tool = _new(Tool)
    fields = tool.__dict__
    fields["name"] = name
    fields["description"] = description
    fields["parameters"] = parameters
    return tool


def walked_conversation(
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
