"""What a cloud door hands the engine: the provider request behind the cloud's path, or its refusal."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from .. import ErrorResponse, Rule

__all__ = ["CloudRefusal", "CloudRoute", "json_error"]


@dataclass(frozen=True)
class CloudRoute:
    """A cloud request, as the provider's own API would take it."""

    cloud: Literal["azure", "vertex"]
    provider: str
    """The wire format the body speaks: `openai`, `openai-responses`, `anthropic` or `gemini`."""
    path: str
    """The provider's own path for the request, which the engine routes."""
    body: bytes
    """The body, with the model the cloud's path names put where the provider expects it."""
    model: str
    """The model (Azure: the deployment) the path names, or the body's own where the path names none
    (Azure's Responses and v1 paths); it names the scenario."""
    resource: str
    """How the cloud names the model in its not-found error: Vertex's publisher model path."""


@dataclass(frozen=True)
class CloudRefusal:
    """The cloud's front end refusing a request before any model sees it."""

    provider: str
    """The wire format whose request-id headers the answer carries."""
    error: ErrorResponse


def json_error(status: int, envelope: dict[str, Any], message: str, rule: Rule = Rule.MALFORMED) -> ErrorResponse:
    """An `ErrorResponse` whose body is `envelope` as the cloud sends it (compact JSON)."""
    body = json.dumps(envelope, ensure_ascii=False).encode()
    return ErrorResponse(status, body, message=message, rule=rule)
