"""The sandbox's own limits on one request, so that no single request can hold the engine for long.

May touch: the request body and its neutral conversation, read-only; each limit is refused with a
`sandbox:` 400 in the request's own wire format, naming the limit and what to change.
"""

from __future__ import annotations

from ..messages._types import ToolCall
from ..wire import Conversation, Rule, WireFormat
from ..wire._json import loads

__all__ = ["COUNT_ABOVE", "MAX_CALLS_PER_TURN", "MAX_ITEMS", "MAX_MESSAGES", "check_items", "check_size"]

MAX_MESSAGES = 4096
"""Messages (neutral: one per tool result) in one request. [INF] A sandbox limit, not a provider's:
a conversation within the budget of 50 turns needs a small fraction of it, and it keeps the cost of
one request bounded."""
MAX_CALLS_PER_TURN = 512
"""Tool calls in one assistant turn. [INF] A sandbox limit; no scripted turn comes near it."""
MAX_ITEMS = 10_000
"""Messages, content parts and tools in one request, counted before the request is parsed. [INF] A
sandbox limit: 4 MiB holds 150,000 tiny ones, each validated in turn, while a conversation within
the budget holds a few hundred."""
COUNT_ABOVE = 64 * 1024
"""Bodies smaller than this cannot hold enough items to matter, and skip the count."""


def check_items(wire: WireFormat, body: bytes) -> None:
    """Refuse a request with more than `MAX_ITEMS` messages, parts and tools before the wire format
    parses and validates them one by one. Anything this cannot read is left to the wire format."""
    try:
        data = loads(body)
    except (ValueError, RecursionError):
        return
    if not isinstance(data, dict):
        return
    items = 0
    for key in ("messages", "input", "contents", "tools"):
        value = data.get(key)
        if not isinstance(value, list):
            continue
        items += len(value)
        for entry in value:
            if isinstance(entry, dict):
                for inner in ("content", "parts", "functionDeclarations", "function_declarations"):
                    nested = entry.get(inner)
                    if isinstance(nested, list):
                        items += len(nested)
    if items > MAX_ITEMS:
        raise wire.error(
            400,
            f"sandbox: this request holds {items} messages, content parts and tools; the sandbox accepts "
            f"at most {MAX_ITEMS}. A conversation that long is a loop that never stopped: bound the "
            "loop (about 5 rounds), and start a new conversation for a new task.",
            rule=Rule.TOO_LARGE,
            code="sandbox_too_many_items",
        )


def check_size(wire: WireFormat, conversation: Conversation, checked: int = 0) -> None:
    """The sandbox's limits on one request, so that no single request can hold the engine for long.
    The first `checked` messages were checked already (a continuation's kept chain)."""
    messages = conversation.messages
    if len(messages) > MAX_MESSAGES:
        raise wire.error(
            400,
            f"sandbox: this request holds {len(messages)} messages (tool results count one each); the "
            f"sandbox accepts at most {MAX_MESSAGES}. A conversation that long is a loop that never "
            "stopped: bound the loop (about 5 rounds), and start a new conversation for a new task.",
            rule=Rule.TOO_LARGE,
            code="sandbox_too_many_messages",
        )
    for index in range(checked, len(messages)):
        message = messages[index]
        if len(message.content) <= MAX_CALLS_PER_TURN:
            continue  # too few parts to hold that many calls: nearly every message, counted for nothing
        calls = sum(1 for part in message.content if isinstance(part, ToolCall))
        if calls > MAX_CALLS_PER_TURN:
            raise wire.error(
                400,
                f"sandbox: {conversation.paths[index]} holds {calls} tool calls in one assistant turn; the "
                f"sandbox accepts at most {MAX_CALLS_PER_TURN}. The scripted model never makes that many: "
                "echo each turn exactly as it came back (resp.message), once.",
                rule=Rule.TOO_LARGE,
                param=conversation.paths[index],
                code="sandbox_too_many_calls",
                message_index=index,
            )
