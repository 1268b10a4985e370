"""A provider that refuses one request of a conversation, the way real ones do when it grows too long.

Challenge 07 teaches that a failing *tool* becomes an error result. A catch-all around the whole
round swallows the *provider's* errors too, then resends the refused request or returns an earlier
response. To grade that, the grader refuses request `at` with the provider's own context-length
error (a 400 that no retry can fix: the conversation only grows, so every later request is refused
too) and expects the loop to let the `ProviderError` through.

Refusals are answered here, before the sandbox sees the request, so the sandbox's journal holds
only the requests the provider accepted; `refused` counts the refusals sent.
"""

from __future__ import annotations

import httpx

from ...adapters._transport import SandboxTransport
from ...wire import Rule, WireError, get_wire_format

__all__ = ["RefusingTransport", "refusal", "refusal_text"]

# Each provider's context-length refusal, verbatim, with the token counts of one real capture.
_TOO_LONG: dict[str, tuple[str, str | None, str | None]] = {
    # rahul2002m/ChatPDF#6, bytedance/deer-flow#310: 400, param "messages", code "context_length_exceeded".
    "openai": (
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130043 "
        "tokens. Please reduce the length of the messages.",
        "messages",
        "context_length_exceeded",
    ),
    # dyad-sh/dyad#1672: 400, param "input", code "context_length_exceeded".
    "openai-responses": (
        "Your input exceeds the context window of this model. Please adjust your input and try again.",
        "input",
        "context_length_exceeded",
    ),
    # sojohnnysaid/project-guide#2, anthropics/claude-code#12186: 400 invalid_request_error.
    "anthropic": ("prompt is too long: 208656 tokens > 200000 maximum", None, None),
    # google-gemini/gemini-cli#6678, #4118: 400 INVALID_ARGUMENT.
    "gemini": (
        "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
        None,
        "INVALID_ARGUMENT",
    ),
}


def refusal_text(provider: str) -> str:
    return _TOO_LONG[provider][0]


def refusal(provider: str) -> WireError:
    """The provider's context-length refusal, as its 400 response."""
    message, param, code = _TOO_LONG[provider]
    return get_wire_format(provider).error(400, message, rule=Rule.TOO_LARGE, param=param, code=code)


class RefusingTransport(SandboxTransport):
    """The sandbox, except that request number `at` (1-based) and every one after it are refused as too long."""

    def __init__(self, inner: SandboxTransport, provider: str, at: int) -> None:
        super().__init__(inner.engine)
        self.journal = inner.journal
        self.provider = provider
        self.at = at
        self.seen = 0
        self.refused = 0

    def _refusal(self, request: httpx.Request) -> httpx.Response | None:
        self.seen += 1
        if self.seen < self.at:
            return None
        self.refused += 1
        error = refusal(self.provider)
        return httpx.Response(error.status, headers=error.headers, content=error.body, request=request)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._refusal(request) or super().handle_request(request)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return self._refusal(request) or await super().handle_async_request(request)
