"""What OpenAI's two APIs (Chat Completions and Responses) share on the wire: the error envelope and
the headers of every answer."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ._base import HEX, Rule, WireError, unique_token
from ._sse import to_bytes

__all__ = ["openai_error", "openai_request_headers"]


def openai_request_headers(request_digest: str) -> dict[str, str]:
    """`x-request-id` (the SDKs' `_request_id`: `req_` and 32 hex digits), `openai-processing-ms` and
    `openai-version`, as every recorded answer carries them (pydantic-ai cassettes
    test_openai/test_openai_tool_output.yaml, test_run_stream_sync_streams_real_model.yaml, 2026).
    The processing time is a plausible number derived from the request, so output stays byte-identical."""
    return {
        "x-request-id": "req_" + unique_token(f"x-request-id:{request_digest}", 32, HEX),
        "openai-processing-ms": str(100 + int(request_digest[:4], 16) % 700),
        "openai-version": "2020-10-01",
    }


def openai_error(
    status: int, envelope: Mapping[str, Any], *, rule: Rule, message_index: int | None = None
) -> WireError:
    """The envelope as the real API sends it, pretty-printed with two-space indents: Chat Completions
    (neuron-core/neuron-ai#292) and Responses alike (a relayed Responses body, quoted raw in a public
    issue: `'{\\n  "error": {\\n    "message": "No tool call found for function call output ...`)."""
    body = to_bytes(json.dumps(envelope, indent=2, ensure_ascii=False))
    message = envelope["error"]["message"]
    return WireError(
        status,
        body,
        message=message,
        rule=rule,
        headers={"content-type": "application/json"},
        message_index=message_index,
    )
