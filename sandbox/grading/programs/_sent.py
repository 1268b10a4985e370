"""What a program sent, read from the request bytes: the conversation a failure's transcript shows.

A Python learner's messages are recorded by the grader's client as it encodes them. A program in
another language has no such client, and for a request the provider rejected on an ordering rule the
journal holds no conversation (the wire format refuses before it hands one over). So the request body
is read here leniently: the shape checks that pass, without the ordering rules that failed, into the
same neutral messages the wire format would have produced.
"""

from __future__ import annotations

from ...engine._engine import Exchange
from ...messages._types import Message
from ...wire import route
from ...wire.anthropic._body import Rejection as AnthropicRejection
from ...wire.anthropic._body import load_json
from ...wire.anthropic._parse import to_neutral as _anthropic_neutral
from ...wire.anthropic._validate import validate_schema
from ...wire.gemini._body import Rejection as GeminiRejection
from ...wire.gemini._parse import to_neutral as _gemini_neutral
from ...wire.gemini._validate import merge_model_runs, read_request
from ...wire.openai_chat._parse import neutral_message
from ...wire.openai_chat._validate import Rejection as ChatRejection
from ...wire.openai_chat._validate import load_body
from ..judge._clients import Sent

__all__ = ["read_sent", "sent_messages"]


def sent_messages(exchange: Exchange) -> tuple[Message, ...] | None:
    """The messages of one request: as the provider read them, or read leniently when it refused."""
    if exchange.conversation is not None:
        return tuple(exchange.conversation.messages)
    found = route(exchange.path)
    if found is None:
        return None
    try:
        if found.provider == "openai":
            data = load_body(exchange.request_body)
            return tuple(neutral_message(message) for message in data["messages"])
        if found.provider == "anthropic":
            return tuple(_anthropic_neutral(validate_schema(load_json(exchange.request_body))).messages)
        if found.provider == "gemini":
            parsed = read_request(exchange.request_body)
            return tuple(_gemini_neutral(parsed, *merge_model_runs(parsed.contents))[0])
    except (ChatRejection, AnthropicRejection, GeminiRejection, LookupError, TypeError, ValueError, AttributeError):
        return None  # not even the shape was right: the provider's own message says what is wrong
    return None  # OpenAI Responses: its parser checks shape and order in one pass


def read_sent(exchanges: list[Exchange]) -> Sent:
    """Request body -> messages, for every request whose messages can be read."""
    sent = Sent()
    for exchange in exchanges:
        messages = sent_messages(exchange)
        if messages is not None:
            sent[exchange.request_body] = messages
    return sent
