"""OpenAI's faults, for Chat Completions and Responses: error bodies, headers and stream events.

Kept here rather than in `sandbox/wire/`: a fault is not part of the request/response codec (the
codec says how a turn looks; a fault says how the provider fails around it), and the retry hints,
status tables and attempt counting that go with it are one concern. Each provider's truth is in its
own module, with its sources. Pure functions of the fault and the request.

Sources: [SDK] openai-python 3.57 (`_base_client`, `_streaming`, `types/responses/response_error_event.py`);
[ISSUE] threads quoting the real API.
"""

from __future__ import annotations

import json
from typing import Any

from ...wire._openai import openai_request_headers
from ...wire._retry_hints import hint_headers
from ...wire._sse import dumps, sse_frame, to_bytes
from ._spec import Fault

__all__ = ["error", "stream_error"]


def error(fault: Fault, status: int, model: str, digest: str) -> tuple[dict[str, str], bytes, str]:
    """(headers, body, message) of the error response for `fault`."""
    request_id = openai_request_headers(digest)["x-request-id"]
    if fault.kind == "rate_limit":
        # Body: `type` "requests" and code `rate_limit_exceeded` [ISSUE mmz-001/knowledge_gpt#5 shows
        # error_type=requests; open-webui/open-webui#3743]; message in the 2024 wording [ISSUE
        # zachblume/autospec#16, "Limit 30000, Used 28770"]; the x-ratelimit-* names and their
        # duration format ("120ms") [ISSUE open-webui/open-webui#3743].
        wait = _duration(fault.retry_after)
        message = (
            f"Rate limit reached for {model} in organization org-sandbox on requests per min (RPM): "
            f"Limit 500, Used 500, Requested 1. Please try again in {wait}. Visit "
            "https://platform.openai.com/account/rate-limits to learn more."
        )
        envelope = {"message": message, "type": "requests", "param": None, "code": "rate_limit_exceeded"}
        headers = {
            "x-ratelimit-limit-requests": "500",
            "x-ratelimit-remaining-requests": "0",
            "x-ratelimit-reset-requests": wait,
            "x-ratelimit-limit-tokens": "30000",
            "x-ratelimit-remaining-tokens": "29000",
            "x-ratelimit-reset-tokens": "2ms",
        }
    elif fault.kind == "overloaded" or status == 503:
        # [ISSUE ikechan8370/chatgpt-plugin#125] 503, type server_error, code null.
        message = (
            "That model is currently overloaded with other requests. You can retry your request, or contact "
            "us through our help center at help.openai.com if the error persists. (Please include the "
            f"request ID {request_id} in your message.)"
        )
        envelope, headers = {"message": message, "type": "server_error", "param": None, "code": None}, {}
    else:
        # [ISSUE openai/codex#48, openai/openai-realtime-console#51] 500, type server_error.
        message = (
            "The server had an error while processing your request. Sorry about that! You can retry your "
            "request, or contact us through our help center at help.openai.com if the error persists. "
            f"(Please include the request ID {request_id} in your message.)"
        )
        envelope, headers = {"message": message, "type": "server_error", "param": None, "code": None}, {}
    body = to_bytes(json.dumps({"error": envelope}, indent=2, ensure_ascii=False))
    return {"content-type": "application/json", **headers, **hint_headers(fault.retry_after)}, body, message


def stream_error(provider: str, sent: list[bytes]) -> list[bytes]:
    """The frames that end a stream in error, after the frames `sent`."""
    if provider == "openai-responses":
        return _responses_error(sent)
    # Chat Completions: a `data:` chunk holding an error object, and no `[DONE]` after it [ISSUE
    # sashabaranov/go-openai#396 and #69 quote it; SDK `_streaming.Stream.__stream__` raises APIError
    # on a chunk with a truthy "error"].
    error = {
        "message": "The server had an error processing your request. Sorry about that! You can retry your "
        "request, or contact us through our help center at help.openai.com if you keep seeing this error.",
        "type": "server_error",
        "param": None,
        "code": None,
    }
    return [sse_frame(dumps({"error": error}))]


_OVERLOADED = "Our servers are currently overloaded. Please try again later."


def _responses_error(sent: list[bytes]) -> list[bytes]:
    """An `error` event (the SDK's `ResponseErrorEvent`: code, message, param, sequence_number [SDK]),
    then `response.failed` with the response's `error`; codes and message [ISSUE Wei-Shaw/sub2api#6631]."""
    sequence = len(sent)
    error_event = {
        "type": "error",
        "code": "server_is_overloaded",
        "message": _OVERLOADED,
        "param": None,
        "sequence_number": sequence,
    }
    response = _first_response(sent)
    response.update(status="failed", error={"code": "server_error", "message": _OVERLOADED})
    failed = {"type": "response.failed", "sequence_number": sequence + 1, "response": response}
    return [
        sse_frame(dumps(error_event), event="error"),
        sse_frame(dumps(failed), event="response.failed"),
    ]


def _first_response(sent: list[bytes]) -> dict[str, Any]:
    """The response object of `response.created` (the stream's first frame), or a minimal one."""
    for frame in sent[:1]:
        for line in frame.decode("utf-8", "replace").splitlines():
            if line.startswith("data: "):
                data = json.loads(line[6:])
                if isinstance(data, dict) and isinstance(data.get("response"), dict):
                    return dict(data["response"])
    return {"object": "response", "output": []}


def _duration(seconds: float) -> str:
    """OpenAI's duration format in rate-limit text and headers: `20ms`, `1.5s` [ISSUE open-webui#3743]."""
    return f"{round(seconds * 1000)}ms" if seconds < 1 else f"{seconds:g}s"
