"""Azure OpenAI: the deployment paths, the `api-key` header, `api-version`, and the front end's errors.

What the official client sends (openai-python `lib/azure.py`, `AzureOpenAI`): Chat Completions at
`{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=V` (the deployment taken from
`model` unless `azure_deployment` pins it), Responses at `{endpoint}/openai/responses?api-version=V`,
the key in an `api-key` header (or `Authorization: Bearer` with an Entra ID token); the v1 API
(`base_url={endpoint}/openai/v1/`, the plain `OpenAI` client) at `/openai/v1/chat/completions` and
`/openai/v1/responses`, where `api-version` is optional. The deployment names the scenario, as the
model does elsewhere.

The front end's errors, as public threads quote them:
- no `api-version`: 404 `{"error":{"code":"404","message":"Resource not found"}}` [OBS]
  (MicrosoftDocs/azure-docs#114602, ThinkInAIXYZ/deepchat#262);
- an `api-version` the service does not know: 400 `{"error":{"code":"BadRequest","message":"API
  version not supported"}}` [OBS] (hotovo/aider-desk#460, spring-projects/spring-ai#3873);
- no key: 401 `{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong
  API endpoint. ..."}}` [OBS] (SciSharp/BotSharp#386, microsoft/semantic-kernel#10337);
- an unknown deployment: 404 `DeploymentNotFound` [OBS] (chatboxai/chatbox#646,
  Azure-Samples/azure-search-openai-demo-csharp#379).
The order of the checks (key, then version, then deployment) is [INF]. Past the front end, Azure
answers with OpenAI's own error bodies, so the wire formats' rules apply unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from urllib.parse import parse_qs

from .. import ErrorResponse, Rule
from .._json import loads
from ._route import CloudRefusal, CloudRoute, json_error

__all__ = ["API_VERSIONS", "HOSTS", "deployment_not_found", "translate"]

HOSTS = (r"[A-Za-z0-9-]+\.openai\.azure\.com", r"[A-Za-z0-9-]+\.cognitiveservices\.azure\.com")
"""An Azure OpenAI resource's endpoint hosts (`{resource}.openai.azure.com`, and the AI Services form)."""

API_VERSIONS = frozenset(
    {
        # GA data-plane inference versions (Azure/azure-rest-api-specs, AzureOpenAI/inference/stable).
        "2022-12-01",
        "2023-05-15",
        "2024-02-01",
        "2024-06-01",
        "2024-10-21",
        # Previews the official clients and their docs name (the preview folder of the same specs).
        "2023-03-15-preview",
        "2023-06-01-preview",
        "2023-07-01-preview",
        "2023-08-01-preview",
        "2023-09-01-preview",
        "2023-10-01-preview",
        "2023-12-01-preview",
        "2024-02-15-preview",
        "2024-03-01-preview",
        "2024-04-01-preview",
        "2024-05-01-preview",
        "2024-07-01-preview",
        "2024-08-01-preview",
        "2024-09-01-preview",
        "2024-10-01-preview",
        "2024-12-01-preview",
        "2025-01-01-preview",
        "2025-02-01-preview",
        "2025-03-01-preview",
        "2025-04-01-preview",
    }
)
"""The `api-version` values the deployment paths accept; any other is "API version not supported"."""

_V1_VERSIONS = frozenset({"preview", "latest", "v1"})
"""What the v1 API takes, when a client sends `api-version` at all."""

_DEPLOYMENT = re.compile(r"^/openai/deployments/(?P<deployment>[^/]+)/chat/completions/?$")
_BODY_NAMED = {
    "/openai/responses": ("openai-responses", True),
    "/openai/v1/chat/completions": ("openai", False),
    "/openai/v1/responses": ("openai-responses", False),
}
"""The paths whose body names the deployment: (wire format, whether `api-version` is required)."""

_ACCESS_DENIED = (
    "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key "
    "for an active subscription and use a correct regional API endpoint for your resource."
)
_NOT_DEPLOYED = (
    "The API deployment for this resource does not exist. If you created the deployment within the last 5 "
    "minutes, please wait a moment and try again."
)


def translate(path: str, query: str, headers: Mapping[str, str], body: bytes) -> CloudRoute | CloudRefusal:
    """An Azure OpenAI request as the OpenAI API would take it, or the front end's refusal."""
    deployment = _DEPLOYMENT.match(path)
    provider, versioned = ("openai", True) if deployment else _BODY_NAMED.get(path.rstrip("/"), ("openai", True))
    if not _has_key(headers):
        return CloudRefusal(provider, _error(401, "401", _ACCESS_DENIED))
    if deployment is None and path.rstrip("/") not in _BODY_NAMED:
        return CloudRefusal(provider, _resource_not_found())
    versions = parse_qs(query, keep_blank_values=True).get("api-version", [])
    version = versions[-1] if versions else None
    if versioned and version is None:
        return CloudRefusal(provider, _resource_not_found())
    if version is not None and version not in (API_VERSIONS if versioned else _V1_VERSIONS):
        return CloudRefusal(provider, _error(400, "BadRequest", "API version not supported"))
    own_path = "/v1/responses" if provider == "openai-responses" else "/v1/chat/completions"
    if deployment is None:
        return CloudRoute("azure", provider, own_path, body, _body_model(body), "")
    name = deployment["deployment"]
    return CloudRoute("azure", provider, own_path, _with_model(body, name), name, name)


def deployment_not_found() -> ErrorResponse:
    """404 `DeploymentNotFound`: the path names a deployment (a scenario) the sandbox does not have."""
    return _error(404, "DeploymentNotFound", _NOT_DEPLOYED, Rule.UNKNOWN_SCENARIO)


def _has_key(headers: Mapping[str, str]) -> bool:
    if headers.get("api-key", "").strip():
        return True
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and bool(token.strip())


def _resource_not_found() -> ErrorResponse:
    return _error(404, "404", "Resource not found", Rule.NOT_FOUND)


def _error(status: int, code: str, message: str, rule: Rule = Rule.MALFORMED) -> ErrorResponse:
    return json_error(status, {"error": {"code": code, "message": message}}, message, rule)


def _body_model(body: bytes) -> str:
    """The model the body names (the v1 API and Azure Responses take the deployment there)."""
    try:
        data = loads(body)
    except (ValueError, RecursionError):
        return ""
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) else ""


def _with_model(body: bytes, deployment: str) -> bytes:
    """The body with `model` set to the deployment, which is what Azure serves whatever `model` says.

    A body that is not a JSON object goes on unchanged, for the wire format to refuse in its own words.
    """
    try:
        data = loads(body)
    except (ValueError, RecursionError):
        return body
    if not isinstance(data, dict) or data.get("model") == deployment:
        return body
    data["model"] = deployment
    return json.dumps(data, ensure_ascii=False).encode()
