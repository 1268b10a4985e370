"""Gemini's faults: Google's error envelope (pretty-printed, as the real API sends it), the
`google.rpc.RetryInfo` hint, and an error inside a stream.

In `sandbox/engine/faults/` rather than `sandbox/wire/` for the reason `faults/openai.py` gives. Sources:
[SDK] python-genai 3.6 (`errors.APIError`, `_api_client` streams and `retry_args`); [ISSUE] threads
quoting the real API. Pure functions.
"""

from __future__ import annotations

import json
from typing import Any

from ...wire._retry_hints import RETRY_INFO
from ...wire._sse import dumps, sse_frame
from ._spec import Fault

__all__ = ["error", "stream_error"]

_STATUS = {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
_MESSAGES = {
    # [ISSUE lobehub/lobehub#9728, google-gemini/cookbook#425]
    503: "The model is overloaded. Please try again later.",
    # [INF] Google's usual text for INTERNAL
    500: "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
    504: "Deadline expired before operation could complete.",  # [INF]
}


def error(fault: Fault, status: int, model: str, digest: str) -> tuple[dict[str, str], bytes, str]:
    """(headers, body, message). Gemini sends no retry header; a 429's hint is in the body."""
    details: list[dict[str, Any]] = []
    if status == 429:
        message, details = _rate_limit(fault, model)
    else:
        message = _MESSAGES[status]
    envelope: dict[str, Any] = {"code": status, "message": message, "status": _STATUS[status]}
    if details:
        envelope["details"] = details
    body = (json.dumps({"error": envelope}, indent=2, ensure_ascii=False) + "\n").encode(errors="backslashreplace")
    return {"content-type": "application/json; charset=UTF-8"}, body, message


def _rate_limit(fault: Fault, model: str) -> tuple[str, list[dict[str, Any]]]:
    """The free-tier quota text, Help, QuotaFailure and RetryInfo details [ISSUE
    ogkalu2/comic-translate#403, continuedev/continue#9570]. The real `retryDelay` is whole seconds
    (`"58s"`); a scripted hint of 20 ms is written `"0.020s"`, a valid protobuf Duration [INF]."""
    metric = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
    message = (
        "You exceeded your current quota, please check your plan and billing details. For more information "
        "on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current "
        f"usage, head to: https://ai.dev/rate-limit. \n* Quota exceeded for metric: {metric}, limit: 10, "
        f"model: {model}\nPlease retry in {fault.retry_after:g}s."
    )
    details: list[dict[str, Any]] = [
        {
            "@type": "type.googleapis.com/google.rpc.Help",
            "links": [
                {
                    "description": "Learn more about Gemini API quotas",
                    "url": "https://ai.google.dev/gemini-api/docs/rate-limits",
                }
            ],
        },
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [
                {
                    "quotaMetric": metric,
                    "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                    "quotaDimensions": {"location": "global", "model": model},
                    "quotaValue": "10",
                }
            ],
        },
    ]
    if fault.retry_after > 0:
        details.append({"@type": RETRY_INFO, "retryDelay": f"{fault.retry_after:.3f}s"})
    return message, details


def stream_error(provider: str, sent: list[bytes]) -> list[bytes]:
    """A `data:` chunk holding the error envelope: python-genai raises it as `ServerError(503)`
    (`_api_client` checks each chunk for a leading `{"error":` [SDK])."""
    error = {"error": {"code": 503, "message": _MESSAGES[503], "status": _STATUS[503]}}
    return [sse_frame(dumps(error), newline="\r\n")]
