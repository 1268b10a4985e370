"""A request at a path no provider serves: answer in the shape of the provider it was meant for, and
name the base URL that would have reached it.

Clients disagree on what a base URL includes: the anthropic SDK appends `/v1/messages` to
`http://HOST:PORT`, while the Vercel AI SDK appends `/messages` to `http://HOST:PORT/v1`; google-genai
appends `/v1beta/models/...` to `http://HOST:PORT`, litellm appends `/models/...` to
`http://HOST:PORT/v1beta`. A wrong prefix is the most common first mistake, and the real APIs answer it
with a bare 404, so the sandbox adds what the path tells about the intended endpoint.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..wire import ErrorResponse, Rule, WireFormat, get_wire_format

__all__ = ["wrong_path"]


@dataclass(frozen=True)
class _Endpoint:
    provider: str
    """The wire format whose error shape the answer takes."""
    api: str
    real: str
    """The endpoint's real path, the model replaced by `{model}` for Gemini."""
    tail: re.Pattern[str]
    """Matches the end of a path aimed at this endpoint; group `base` is what came before the part of
    the real path that the path shares."""
    shared: str
    """The part of the real path every client appends (the rest may be in the base URL or not)."""


_ENDPOINTS = (
    _Endpoint(
        "anthropic",
        "Anthropic Messages",
        "/v1/messages",
        re.compile(r"^(?P<base>.*?)(?P<shared>/messages)/?$"),
        "/messages",
    ),
    _Endpoint(
        "gemini",
        "Gemini generateContent",
        "/v1beta/models/{model}:generateContent",
        re.compile(r"^(?P<base>.*?)(?P<shared>/models/[^/]+:(?:stream)?[gG]enerateContent)/?$"),
        "/models/...",
    ),
    _Endpoint(
        "openai",
        "OpenAI Chat Completions",
        "/v1/chat/completions",
        re.compile(r"^(?P<base>.*?)(?P<shared>/chat/completions)/?$"),
        "/chat/completions",
    ),
    _Endpoint(
        "openai-responses",
        "OpenAI Responses",
        "/v1/responses",
        re.compile(r"^(?P<base>.*?)(?P<shared>/responses)/?$"),
        "/responses",
    ),
)

_REAL_PREFIX = {"anthropic": "/v1", "gemini": "/v1beta", "openai": "/v1", "openai-responses": "/v1"}
"""What a client that appends only the shared part needs at the end of its base URL."""

_CLIENT_BASES = {
    "anthropic": "http://HOST:PORT for the anthropic SDK, LangChain and litellm; http://HOST:PORT/v1 for "
    "clients that append only /messages (the Vercel AI SDK)",
    "gemini": "http://HOST:PORT for google-genai and LangChain; http://HOST:PORT/v1beta for clients that "
    "append only /models/... (litellm's api_base, the Vercel AI SDK)",
    "openai": "http://HOST:PORT/v1 for the openai SDK and every framework built on it (http://HOST:PORT works too)",
    "openai-responses": "http://HOST:PORT/v1 for the openai SDK and every framework built on it "
    "(http://HOST:PORT works too)",
}


def _not_found_text(provider: str, method: str, path: str) -> str:
    """The real API's own words for an unknown route."""
    if provider.startswith("openai"):
        return f"Invalid URL ({method} {path})"  # verbatim, the openai SDKs' own tests quote it
    if provider == "anthropic":
        return "Not Found"  # [INF] the not_found_error of an unknown route
    return f"The requested URL {path} was not found on this server."  # [INF] Google's front end


def wrong_path(method: str, path: str) -> tuple[WireFormat, ErrorResponse]:
    """The provider a request at an unserved `path` was meant for, and its 404 with a hint."""
    for endpoint in _ENDPOINTS:
        match = endpoint.tail.match(path)
        if match:
            return _answer(endpoint, method, path, match["base"])
    wire = get_wire_format(_provider_by_prefix(path))
    hint = (
        "sandbox: no provider's API lives at this path. The sandbox serves POST /v1/chat/completions and "
        "/v1/responses (OpenAI), /v1/messages (Anthropic) and /v1beta/models/{model}:generateContent or "
        ":streamGenerateContent (Gemini). Point the client's base URL at the sandbox, e.g. "
        "http://127.0.0.1:8765/v1 for OpenAI clients or http://127.0.0.1:8765 for the anthropic SDK and google-genai."
    )
    return wire, _error(wire, method, path, hint)


def _answer(endpoint: _Endpoint, method: str, path: str, base: str) -> tuple[WireFormat, ErrorResponse]:
    wire = get_wire_format(endpoint.provider)
    prefix = _REAL_PREFIX[endpoint.provider]
    if method.upper() != "POST" and base in (prefix, ""):
        hint = f"sandbox: the {endpoint.api} endpoint takes POST only; this request used {method.upper()}."
        return wire, _error(wire, method, path, hint)
    if base.endswith(prefix + prefix):
        fix = f"the path repeats {prefix}: remove {prefix} from the end of the client's base URL"
    elif base.endswith(prefix):
        fix = f"the path has {base[: -len(prefix)]!r} before {prefix}: remove it from the client's base URL"
    elif base:
        fix = f"the path has {base!r} where the API has {prefix}: end the client's base URL with {prefix} instead"
    else:
        fix = f"the path lacks {prefix}: end the client's base URL with {prefix}"
    hint = (
        f"sandbox: this looks like a request for the {endpoint.api} API, which is at POST {endpoint.real}; "
        f"{fix}. Base URLs by client: {_CLIENT_BASES[endpoint.provider]}."
    )
    return wire, _error(wire, method, path, hint)


def _provider_by_prefix(path: str) -> str:
    if path.startswith(("/v1beta/", "/v1alpha/", "/v1/models/")):
        return "gemini"
    if path.startswith("/v1/messages"):
        return "anthropic"
    return "openai"


def _error(wire: WireFormat, method: str, path: str, hint: str) -> ErrorResponse:
    message = f"{_not_found_text(wire.name, method.upper(), path)}\n\n{hint}"
    return wire.error(404, message, rule=Rule.NOT_FOUND)
