"""What OpenAI's two APIs (Chat Completions and Responses) share on the wire: the error envelope and
the headers of every answer."""

from __future__ import annotations

import functools
import json
from typing import Any

from ._base import HEX, ErrorResponse, Rule, unique_token
from ._json import loads
from ._sse import to_bytes

__all__ = ["call_arguments", "openai_error", "openai_request_headers"]

_MEMO_LENGTH = 256
"""`arguments` strings up to this long are remembered (a loop sends each call back on every later
request); longer ones are decoded each time, so the memo stays small."""
_FLAT = (str, int, bool, type(None))
_PROCESSING_MS = {f"{value:02x}": str(100 + value * 700 // 256) for value in range(256)}
"""A plausible `openai-processing-ms` (100-797) by the first two hex digits of an answer's identity."""


def openai_request_headers(request_digest: str) -> dict[str, str]:
    """`x-request-id` (the SDKs' `_request_id`: `req_` and 32 hex digits), `openai-processing-ms` and
    `openai-version`, as every recorded answer carries them (pydantic-ai cassettes
    test_openai/test_openai_tool_output.yaml, test_run_stream_sync_streams_real_model.yaml, 2026).
    The processing time is a plausible number derived from the answer's identity, so a fresh engine
    answers the same bytes."""
    return {
        "x-request-id": "req_" + unique_token(f"x-request-id:{request_digest}", 32, HEX),
        "openai-processing-ms": _PROCESSING_MS.get(request_digest[:2], "100"),
        "openai-version": "2020-10-01",
    }


def openai_error(
    status: int,
    message: str,
    *,
    rule: Rule,
    param: str | None = None,
    code: str | None = None,
    message_index: int | None = None,
) -> ErrorResponse:
    """The OpenAI error envelope as the real API sends it, pretty-printed with two-space indents: Chat
    Completions (neuron-core/neuron-ai#292) and Responses alike (a relayed Responses body, quoted raw
    in a public issue: `'{\\n  "error": {\\n    "message": "No tool call found for function call output ...`)."""
    error_type = "server_error" if status >= 500 else "invalid_request_error"
    envelope = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    body = to_bytes(json.dumps(envelope, indent=2, ensure_ascii=False))
    return ErrorResponse(
        status,
        body,
        message=message,
        rule=rule,
        headers={"content-type": "application/json"},
        message_index=message_index,
    )


def call_arguments(text: str) -> dict[str, Any]:
    """A call's `arguments` string (the API passes it through unread, reference C15) as the neutral model
    holds it: the JSON object it encodes, a fresh dict each time, or {} for anything else. A short
    object with no container among its values is decoded once and copied after."""
    if len(text) <= _MEMO_LENGTH:
        items = _flat_items(text)
        if items is not None:
            return dict(items)
    return _decoded(text)


def _decoded(text: str) -> dict[str, Any]:
    try:
        value = loads(text)
    except (ValueError, RecursionError):
        return {}
    return value if type(value) is dict else {}


@functools.lru_cache(maxsize=1024)
def _flat_items(text: str) -> tuple[tuple[str, Any], ...] | None:
    """The object's items when a shallow copy of them is the decoded object (strings, numbers, booleans,
    null; not NaN, which equals no other NaN): else None."""
    value = _decoded(text)
    for inner in value.values():
        if type(inner) not in _FLAT and not (type(inner) is float and inner == inner):
            return None
    return tuple(value.items())
