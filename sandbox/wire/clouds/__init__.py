"""The enterprise doors onto the same wire formats: Azure OpenAI and Vertex AI.

Many engineers reach OpenAI's, Google's and Anthropic's formats through a cloud: Azure OpenAI
(`/openai/deployments/{deployment}/chat/completions?api-version=...`, an `api-key` header) and Vertex
AI (`/v1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent`, a bearer token;
Anthropic's Messages at `.../publishers/anthropic/models/{m}:rawPredict`). The body is the provider's
own, so the engine answers these requests with the same wire formats; what a cloud adds is its path,
its auth, its version handling and the error envelope of its front end, and that is all this package
holds. `translate` turns a cloud request into the provider path and body the engine routes, or into
the refusal the cloud's front end itself sends (a missing key, a missing or unknown api-version).

It reads the request (path, query, headers, body) and builds error bodies; it touches no engine state
and imports no door.
"""

from __future__ import annotations

from collections.abc import Mapping

from .. import ErrorResponse
from . import azure, vertex
from ._route import CloudRefusal, CloudRoute

__all__ = ["CLOUD_HOSTS", "CloudRefusal", "CloudRoute", "not_found", "translate"]

CLOUD_HOSTS = azure.HOSTS + vertex.HOSTS
"""Host patterns (regular expressions) that `sandbox.mock()` answers for the clouds."""


def translate(path: str, query: str, headers: Mapping[str, str], body: bytes) -> CloudRoute | CloudRefusal | None:
    """The provider request behind a cloud path; None when `path` is no cloud's.

    `headers` are keyed in lower case, as every door passes them.
    """
    if path.startswith("/openai/"):
        return azure.translate(path, query, headers, body)
    return vertex.translate(path, query, headers, body)


def not_found(route: CloudRoute) -> ErrorResponse:
    """The cloud's answer for a model (a deployment, a publisher model) the sandbox has no scenario for."""
    if route.cloud == "azure":
        return azure.deployment_not_found()
    return vertex.model_not_found(route.resource)
