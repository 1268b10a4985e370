"""Anthropic's faults: error bodies, headers and the stream's `event: error`.

In `sandbox/engine/faults/` rather than `sandbox/wire/` for the reason `faults/openai.py` gives. Sources:
[SDK] anthropic-sdk-python 2.15 (`_base_client._should_retry`, `_streaming.Stream`, `_error_classes`);
[ISSUE] threads quoting the real API. Pure functions.
"""

from __future__ import annotations

from ...wire._base import BASE58, stable_token
from ...wire._retry_hints import hint_headers
from ...wire._sse import dumps, sse_frame, to_bytes
from ._spec import Fault

__all__ = ["error", "stream_error"]

_TYPES = {429: "rate_limit_error", 500: "api_error", 503: "api_error", 504: "timeout_error", 529: "overloaded_error"}
"""[SDK `types/shared/error_type.py`]; 503's type is [INF]."""
_MESSAGES = {
    # [ISSUE anthropics/claude-code#71668, 2026]
    429: "This request would exceed your account's rate limit. Please try again later.",
    # [ISSUE anthropics/claude-code#35508]
    500: "Internal server error",
    503: "Service unavailable",  # [INF]
    504: "Request timed out",  # [INF]
    # [ISSUE anthropics/anthropic-sdk-typescript#616, anthropics/claude-code#35792]
    529: "Overloaded",
}
_RESET = "2026-01-01T00:00:01Z"
"""[INF] a deterministic RFC 3339 reset time, a second after every timestamp the sandbox sends."""


def error(fault: Fault, status: int, model: str, digest: str) -> tuple[dict[str, str], bytes, str]:
    """(headers, body, message). The body's `request_id` is set per request by the wire format
    (`identified_error_body`); `x-should-retry: true` is what real 429s and 529s carry [ISSUE
    anthropics/anthropic-sdk-typescript#357 and #616 header dumps]."""
    kind, message = _TYPES[status], _MESSAGES[status]
    request_id = "req_011C" + stable_token(f"fault:{digest}", 20, BASE58)
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}
    headers = {"content-type": "application/json", "x-should-retry": "true"}
    if fault.kind == "rate_limit":
        # The anthropic-ratelimit-* names [ISSUE anthropics/anthropic-sdk-typescript#357]; `retry-after`
        # on every 429 [ISSUE anthropics/anthropic-sdk-typescript#358: "Anthropic now always sends
        # retry-after headers"].
        headers.update(
            {
                "anthropic-ratelimit-requests-limit": "50",
                "anthropic-ratelimit-requests-remaining": "0",
                "anthropic-ratelimit-requests-reset": _RESET,
                "anthropic-ratelimit-tokens-limit": "40000",
                "anthropic-ratelimit-tokens-remaining": "40000",
                "anthropic-ratelimit-tokens-reset": _RESET,
            }
        )
    headers.update(hint_headers(fault.retry_after))
    return headers, to_bytes(dumps(body)), message


def stream_error(provider: str, sent: list[bytes]) -> list[bytes]:
    """`event: error` with the overloaded error [DOC streaming guide; reference A.4]: the SDK raises
    it as an `APIStatusError` whose body carries the type (`_streaming.Stream.__stream__` [SDK]). The
    stream ends there, without `message_stop`."""
    error = {"type": "error", "error": {"type": "overloaded_error", "message": _MESSAGES[529]}}
    return [sse_frame(dumps(error), event="error")]
