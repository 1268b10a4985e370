"""The retry hint on the wire, both ways: the headers a fault sends, and reading a hint back.

The SDKs read `retry-after-ms` first, then `retry-after` in seconds (openai and anthropic
`_base_client._parse_retry_after_header` [SDK]); google-genai reads neither, and Gemini puts its hint in
the body's `google.rpc.RetryInfo.retryDelay` (a protobuf Duration, `"58s"`) [ISSUE
ogkalu2/comic-translate#403]. Pure functions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["RETRY_INFO", "hint_headers", "read_hint"]

RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def hint_headers(seconds: float) -> dict[str, str]:
    """`retry-after` in whole seconds (the HTTP form the real APIs send) and `retry-after-ms`, which
    the SDKs prefer, so a scripted hint of 20 ms is waited as 20 ms. None for no hint (0)."""
    if seconds <= 0:
        return {}
    return {"retry-after": str(max(1, math.ceil(seconds))), "retry-after-ms": str(max(1, round(seconds * 1000)))}


def read_hint(headers: Mapping[str, str], body: Any) -> float | None:
    """Seconds the provider asked a client to wait before retrying, or None when it gave no hint."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return _retry_info(body)


def _retry_info(body: Any) -> float | None:
    if isinstance(body, list) and len(body) == 1:
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else ():
        if isinstance(detail, dict) and detail.get("@type") == RETRY_INFO:
            match = _DURATION.match(str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None
