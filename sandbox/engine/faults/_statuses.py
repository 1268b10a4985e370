"""Which status each provider sends for each error kind (the first is the default). Evidence tags as
in the wire references: [SDK] read in the official SDK, [ISSUE] quoted in a public thread, [INF] inferred.

- openai / openai-responses: 429 `rate_limit_exceeded` [SDK `_exceptions.RateLimitError`; ISSUE
  open-webui/open-webui#3743]; 503 "That model is currently overloaded" [ISSUE
  ikechan8370/chatgpt-plugin#125]; 500 "The server had an error while processing your request"
  [ISSUE openai/codex#48].
- anthropic: 429 `rate_limit_error` [SDK `types/shared/error_type.py`]; 529 `overloaded_error`
  [ISSUE anthropics/anthropic-sdk-typescript#616]; 500 `api_error` [ISSUE anthropics/claude-code#35508];
  503 and 504 [SDK `_error_classes.ERROR_CLASSES` maps both; INF: their bodies].
- gemini: 429 `RESOURCE_EXHAUSTED` [ISSUE ogkalu2/comic-translate#403]; 503 `UNAVAILABLE` [ISSUE
  lobehub/lobehub#9728]; 500 `INTERNAL`, 504 `DEADLINE_EXCEEDED` [SDK `_api_client._RETRY_HTTP_STATUS_CODES`;
  INF: their messages].
"""

from __future__ import annotations

__all__ = ["allowed", "sends_hint"]

_OPENAI = {"rate_limit": (429,), "overloaded": (503,), "server_error": (500, 503)}
_STATUSES: dict[str, dict[str, tuple[int, ...]]] = {
    "openai": _OPENAI,
    "openai-responses": _OPENAI,
    "anthropic": {"rate_limit": (429,), "overloaded": (529,), "server_error": (500, 503, 504)},
    "gemini": {"rate_limit": (429,), "overloaded": (503,), "server_error": (500, 503, 504)},
}


def allowed(provider: str, kind: str) -> tuple[int, ...]:
    """The statuses `provider` answers `kind` with, its usual one first; () for a kind without a status."""
    return _STATUSES[provider].get(kind, ())


def sends_hint(provider: str, kind: str) -> bool:
    """Whether `provider`'s answer to `kind` carries a retry hint: OpenAI and Anthropic send headers on
    every error fault; Gemini's only hint is a 429's RetryInfo (`faults/gemini.py`)."""
    return kind in ("rate_limit", "overloaded", "server_error") and (provider != "gemini" or kind == "rate_limit")
