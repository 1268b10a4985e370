"""Vertex AI: Gemini's and Anthropic's formats behind Google Cloud's paths, auth and error envelope.

What the official clients send:
- google-genai with `vertexai=True` (`google/genai/_api_client.py`): `https://{location}-aiplatform.
  googleapis.com/v1beta1/projects/{project}/locations/{location}/publishers/google/models/{model}:
  generateContent` (and `:streamGenerateContent?alt=sse`) with `Authorization: Bearer {token}`; in
  express mode (an API key, no project) `https://aiplatform.googleapis.com/v1beta1/publishers/google/
  models/{model}:generateContent` with `x-goog-api-key`. The body is Gemini's own.
- anthropic's `AnthropicVertex` (`anthropic/lib/vertex/_client.py`): `https://{region}-aiplatform.
  googleapis.com/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict`
  (`:streamRawPredict` to stream) with a bearer token; the body is Anthropic's Messages body without
  `model` (it is in the path) and with `anthropic_version`.

The front end's errors are Google's envelope (`{"error": {"code", "message", "status"}}`):
- no credentials: 401 UNAUTHENTICATED, Google's standard text [OBS] (any googleapis.com API answers
  it; quoted in googleapis/python-genai and GoogleCloudPlatform issue threads);
- an unknown model: 404 NOT_FOUND "Publisher Model `projects/.../publishers/google/models/{m}` was not
  found or your project does not have access to it. ..." [OBS] (genkit-ai/genkit#4688,
  mlflow/mlflow#23092 for the anthropic publisher);
- Anthropic's body without `anthropic_version`: Anthropic's 400 naming the field [INF].
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from urllib.parse import parse_qs

from .. import ErrorResponse, Rule
from .._json import loads
from ._route import CloudRefusal, CloudRoute, json_error

__all__ = ["HOSTS", "model_not_found", "translate"]

HOSTS = (r"aiplatform\.googleapis\.com", r"[a-z0-9-]+-aiplatform\.googleapis\.com")
"""Vertex AI's global and regional endpoint hosts."""

_GOOGLE = re.compile(
    r"^/(?P<version>v1|v1beta1)/(?:projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/)?"
    r"publishers/google/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$"
)
_ANTHROPIC = re.compile(
    r"^/v1/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/"
    r"publishers/anthropic/models/(?P<model>[^/:]+):(?P<method>rawPredict|streamRawPredict)$"
)

_UNAUTHENTICATED = (
    "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or "
    "other valid authentication credential. See https://developers.google.com/identity/sign-in/web/"
    "devconsole-project."
)


def translate(path: str, query: str, headers: Mapping[str, str], body: bytes) -> CloudRoute | CloudRefusal | None:
    """A Vertex AI request as Gemini's or Anthropic's own API would take it; None: not a Vertex path."""
    google = _GOOGLE.match(path)
    if google is not None:
        express = google["project"] is None
        if not (_has_token(headers) or (express and _has_key(query, headers))):
            return CloudRefusal("gemini", _unauthenticated())
        model = google["model"]
        resource = f"publishers/google/models/{model}"
        if not express:
            resource = f"projects/{google['project']}/locations/{google['location']}/{resource}"
        return CloudRoute("vertex", "gemini", f"/v1beta/models/{model}:{google['method']}", body, model, resource)
    anthropic = _ANTHROPIC.match(path)
    if anthropic is None:
        return None
    if not _has_token(headers):
        return CloudRefusal("anthropic", _unauthenticated())
    model = anthropic["model"]
    resource = f"projects/{anthropic['project']}/locations/{anthropic['location']}/publishers/anthropic/models/{model}"
    own = _messages_body(body, model, stream=anthropic["method"] == "streamRawPredict")
    if isinstance(own, ErrorResponse):
        return CloudRefusal("anthropic", own)
    return CloudRoute("vertex", "anthropic", "/v1/messages", own, model, resource)


def model_not_found(resource: str) -> ErrorResponse:
    """404 NOT_FOUND for a publisher model the sandbox has no scenario for."""
    message = (
        f"Publisher Model `{resource}` was not found or your project does not have access to it. Please ensure "
        "you are using a valid model version. For more information, see: "
        "https://cloud.google.com/vertex-ai/generative-ai/docs/learn/model-versions"
    )
    return _google_error(404, "NOT_FOUND", message, Rule.UNKNOWN_SCENARIO)


def _has_token(headers: Mapping[str, str]) -> bool:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and bool(token.strip())


def _has_key(query: str, headers: Mapping[str, str]) -> bool:
    keys = parse_qs(query).get("key", [])
    return bool(headers.get("x-goog-api-key", "").strip() or any(key.strip() for key in keys))


def _unauthenticated() -> ErrorResponse:
    return _google_error(401, "UNAUTHENTICATED", _UNAUTHENTICATED)


def _google_error(status: int, name: str, message: str, rule: Rule = Rule.MALFORMED) -> ErrorResponse:
    return json_error(status, {"error": {"code": status, "message": message, "status": name}}, message, rule)


def _messages_body(body: bytes, model: str, *, stream: bool) -> bytes | ErrorResponse:
    """Anthropic's own Messages body: `model` from the path, `anthropic_version` checked and dropped.

    A body that is not a JSON object goes on unchanged, for the Anthropic wire format to refuse in its
    own words.
    """
    try:
        data = loads(body)
    except (ValueError, RecursionError):
        return body
    if not isinstance(data, dict):
        return body
    version = data.pop("anthropic_version", None)
    if not isinstance(version, str) or not version:
        message = "anthropic_version: Field required"
        envelope = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
        return json_error(400, envelope, message)
    data["model"] = model
    if stream:
        data.setdefault("stream", True)
    return json.dumps(data, ensure_ascii=False).encode()
