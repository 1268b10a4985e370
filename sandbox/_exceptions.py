"""Every error the sandbox raises.

SandboxError
├── ProviderError       the provider (real or fake) answered 4xx/5xx, or sent output we cannot read
├── ToolLoopError       a tool loop gave up (suggested for learners' bounded loops)
└── UsageError          the caller used the sandbox wrongly (bad scenario, bad argument)
    └── ScenarioError   a scenario file or builder is invalid
"""

from __future__ import annotations

from typing import Any

__all__ = ["ProviderError", "SandboxError", "ScenarioError", "ToolLoopError", "UsageError"]


class SandboxError(Exception):
    """Base class for every error raised by the sandbox."""


class ProviderError(SandboxError):
    """The provider rejected the request, or sent something that is not its documented format.

    `str(err)` carries the provider's message verbatim, so the real wording reaches the learner.
    `status` is the HTTP status (0: the connection failed or broke before the answer was whole),
    `error_type` the provider's own name for the error (`rate_limit_error`, `RESOURCE_EXHAUSTED`),
    and `retry_after` the seconds the provider asked to wait before retrying (None: it gave no hint).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        provider: str,
        error_type: str = "",
        body: Any = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.provider = provider
        self.error_type = error_type
        self.body = body
        """The decoded error body (or the raw text when it was not JSON)."""
        self.retry_after = retry_after
        """Seconds to wait before retrying, from `retry-after-ms`, `retry-after` or Gemini's RetryInfo."""

    def __str__(self) -> str:
        kind = f" {self.error_type}" if self.error_type else ""
        return f"{self.provider} {self.status}{kind}: {self.message}"


class ToolLoopError(SandboxError):
    """A tool loop stopped without an answer. Say which bound was hit and what was called."""


class UsageError(SandboxError):
    """The sandbox was used wrongly; the message says what to do instead."""


class ScenarioError(UsageError):
    """A scenario could not be loaded or built."""
