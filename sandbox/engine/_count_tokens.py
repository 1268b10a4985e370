"""Anthropic's `POST /v1/messages/count_tokens` (the SDK's `client.messages.count_tokens()`): the
request checked as a messages request is, and answered `{"input_tokens": N}` by the sandbox's token
rule, one token per four bytes of the request body (at least one), the rule a messages answer's
`usage.input_tokens` follows. Nothing is replayed: counting a history is no turn of the script.

May touch: the Anthropic wire format's reading of the body and its envelopes; it keeps no state.
"""

from __future__ import annotations

import json

from ..wire import get_wire_format
from ..wire.anthropic._parse import parse_count_tokens
from ._exchange import Exchange

__all__ = ["COUNT_TOKENS", "count_tokens", "counted"]

COUNT_TOKENS = "/v1/messages/count_tokens"


def counted(body: bytes) -> int:
    """The sandbox's token count of a request body."""
    return max(1, len(body) // 4)


def count_tokens(method: str, path: str, body: bytes, digest: str) -> tuple[Exchange, str]:
    """The answer to a count, and the model it named (the caller checks it names a scenario).
    Raises `ErrorResponse` for a body the messages endpoint would refuse."""
    wire = get_wire_format("anthropic")
    conversation = parse_count_tokens(body)
    answer = json.dumps({"input_tokens": counted(body)}).encode()
    headers = {"content-type": wire.media_type, **wire.request_headers(digest)}
    exchange = Exchange(method, path, 200, headers, (answer,), body, wire.name, conversation=conversation)
    return exchange, conversation.model
