"""The four wire formats, and how a request path picks one.

One subpackage per provider (`openai_chat`, `openai_responses`, `anthropic`, `gemini`), each split by
job: `_client` (the skyl client's side), `_validate` and `_parse` (reading a request as the API
does), `_encode` (the fake's answer, streamed or not, and the error envelope), `_reasoning`. The
contract they share lives here: `_base` (the `WireFormat` interface and the neutral
conversation), `_sse` (event-stream framing), `_reasoning` (signatures), `_openai` (what both OpenAI
APIs send alike). A provider's package loads on first use, so a process that speaks one provider
never imports the other three.
"""

from __future__ import annotations

import functools
import importlib
import re
from dataclasses import dataclass

from .._exceptions import UsageError
from ._base import Conversation, EncodedRequest, ErrorResponse, ModelTurn, Rule, StreamDecoder, WireFormat

__all__ = [
    "PROVIDERS",
    "Conversation",
    "EncodedRequest",
    "ModelTurn",
    "Route",
    "Rule",
    "StreamDecoder",
    "ErrorResponse",
    "WireFormat",
    "get_wire_format",
    "route",
]

_MODULES = {
    "openai": "openai_chat",
    "openai-responses": "openai_responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
}

PROVIDERS: tuple[str, ...] = tuple(_MODULES)
"""Every `provider=` a client accepts: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages, Gemini."""

_loaded: dict[str, WireFormat] = {}


def get_wire_format(provider: str) -> WireFormat:
    wire = _loaded.get(provider)
    if wire is not None:
        return wire
    if provider not in _MODULES:
        known = ", ".join(repr(name) for name in PROVIDERS)
        raise UsageError(f"Unknown provider={provider!r}. Use one of: {known}.")
    module = importlib.import_module(f"{__name__}.{_MODULES[provider]}")
    wire = module.WIRE
    assert isinstance(wire, WireFormat)
    _loaded[provider] = wire
    return wire


@dataclass(frozen=True)
class Route:
    provider: str
    model: str | None = None
    """Gemini puts the model in the path."""
    stream: bool = False
    """Gemini chooses streaming by path, the others by the body's `stream` field."""

    @property
    def wire(self) -> WireFormat:
        return get_wire_format(self.provider)


_GEMINI_PATH = re.compile(
    r"^/(?:v1|v1beta|v1alpha)/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$"
)


@functools.lru_cache(maxsize=256)
def route(path: str) -> Route | None:
    """The wire format a request path belongs to, at the real APIs' paths (None: not a known path).
    Memoised: every request asks, a `Route` is immutable, and a door sees few distinct paths."""
    if path in ("/v1/chat/completions", "/chat/completions"):
        return Route("openai")
    if path in ("/v1/responses", "/responses"):
        return Route("openai-responses")
    if path == "/v1/messages":
        return Route("anthropic")
    match = _GEMINI_PATH.match(path)
    if match:
        return Route("gemini", model=match["model"], stream=match["method"] == "streamGenerateContent")
    return None
