"""A provider that refuses one request of a conversation, the way real ones do when it grows too long.

Challenge 07 teaches that a failing *tool* becomes an error result. A catch-all around the whole
round swallows the *provider's* errors too, then resends the refused request or returns an earlier
response. To grade that, the grader refuses request `at` with the provider's own context-length
error (a 400 that no retry can fix: the conversation only grows, so every later request is refused
too) and expects the loop to let the `ProviderError` through.

Challenge 10 refuses with the other statuses no retry fixes (`REFUSALS`): a key the provider does not
accept (401), a resource it will not serve this key (403), a model it does not have (404), each with the
provider's own body. A status a provider's own error texts do not show it sending is not played there.

Refusals are answered here, before the sandbox sees the request, so the sandbox's journal holds
only the requests the provider accepted; `refused` counts the refusals sent.
"""

from __future__ import annotations

import httpx

from ...adapters._transport import SandboxTransport
from ...engine._refusals import model_not_found
from ...wire import ErrorResponse, Rule, get_wire_format
from ._lessons import Lesson
from ._retries import RETRY

__all__ = ["REFUSALS", "RefusingTransport", "refusal", "refusal_text", "refused_means"]

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


_OPENAI_KEY = (
    # [3P] the text public threads quote for a revoked or mistyped key: 401, code "invalid_api_key".
    "Incorrect API key provided: sk-sandb***********************************key0. You can find your API key "
    "at https://platform.openai.com/account/api-keys.",
    None,
    "invalid_api_key",
)
_OPENAI_PROJECT = (
    # [3P] a project key without access to the model: 403, code "model_not_found".
    "Project `proj_sandbox` does not have access to model `{model}`",
    None,
    "model_not_found",
)
_OTHERS: dict[tuple[str, int], tuple[str, str | None, str | None]] = {
    ("openai", 401): _OPENAI_KEY,
    ("openai-responses", 401): _OPENAI_KEY,
    ("openai", 403): _OPENAI_PROJECT,
    ("openai-responses", 403): _OPENAI_PROJECT,
    # Reference A.5 [3P]: 401 authentication_error.
    ("anthropic", 401): ("invalid x-api-key", None, None),
    # [DOC] the errors page's permission_error: 403.
    ("anthropic", 403): ("Your API key does not have permission to use the specified resource.", None, None),
    # `clouds/vertex.py` [OBS]: Google's 401 UNAUTHENTICATED.
    ("gemini", 401): (
        "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other "
        "valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
        None,
        "UNAUTHENTICATED",
    ),
    # [3P] a request without a key: 403 PERMISSION_DENIED.
    ("gemini", 403): (
        "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or "
        "other form of API consumer identity to call this API.",
        None,
        "PERMISSION_DENIED",
    ),
}
REFUSALS = (401, 403, 404)
"""The statuses besides 400 that challenge 10 refuses with: each provider's own body for each."""


def refusal_text(provider: str, status: int = 400, model: str = "") -> str:
    if status == 400:
        return _TOO_LONG[provider][0]
    if status == 404:
        return model_not_found(provider, model)
    return _OTHERS[provider, status][0].format(model=model)


def refusal(provider: str, status: int = 400, model: str = "") -> ErrorResponse:
    """The provider's refusal with `status` (400: the context-length one; 404: `model` not found), as
    its response."""
    message = refusal_text(provider, status, model)
    if status == 400:
        _, param, code = _TOO_LONG[provider]
        rule = Rule.TOO_LARGE
    elif status == 404:
        param, code, rule = "model", "model_not_found", Rule.FAULT
    else:
        _, param, code = _OTHERS[provider, status]
        rule = Rule.FAULT
    return get_wire_format(provider).error(status, message, rule=rule, param=param, code=code)


def refused_means(lesson: Lesson, status: int, then: str) -> str:
    """Why a refusal must `then` (reach the caller, end the program), in the words of the challenge whose
    `lesson` is graded: 07 tells a provider's error from a tool's, 10 a retryable status from the rest."""
    if lesson.rule == RETRY.rule:
        return (
            f"Only a 429, 503, 529 or a connection that broke is worth another attempt: a {status} fails the same "
            f"way every time, so it must {then}, sent once."
        )
    return (
        "A provider's error is not a tool's: it means the request itself was refused, so it must "
        f"{then}, not be caught like a failing tool."
    )


class RefusingTransport(SandboxTransport):
    """The sandbox, except that request number `at` (1-based) and every one after it are refused with
    `status` (400: as too long)."""

    def __init__(self, inner: SandboxTransport, provider: str, at: int, *, status: int = 400, model: str = "") -> None:
        super().__init__(inner.engine)
        self.journal = inner.journal
        self.provider = provider
        self.at = at
        self.status = status
        self.model = model
        self.seen = 0
        self.refused = 0

    def _refusal(self, request: httpx.Request) -> httpx.Response | None:
        self.seen += 1
        if self.seen < self.at:
            return None
        self.refused += 1
        error = refusal(self.provider, self.status, self.model)
        return httpx.Response(error.status, headers=error.headers, content=error.body, request=request)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._refusal(request) or super().handle_request(request)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return self._refusal(request) or await super().handle_async_request(request)
