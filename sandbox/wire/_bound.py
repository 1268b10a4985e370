"""A wire format bound from its package's modules: the one place the delegation lives.

Each provider's package keeps its jobs in modules of their own (`_client`, `_parse`, `_encode`);
its `WireFormat` names them once, in a `Jobs`, and `Bound` forwards the contract's methods to them.
What differs between the providers (names, media types, headers, call ids, reasoning, and where
`parse_request` finds the model: the body, or Gemini's URL) stays in the provider's class.
Touches nothing: it only forwards.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from ..messages._types import Request, Response
from ._base import Conversation, EncodedRequest, ErrorResponse, ModelTurn, Rule, StreamDecoder, WireFormat

__all__ = ["Bound", "Jobs"]


class _EncodeRequest(Protocol):
    def __call__(self, request: Request, *, stream: bool, api_key: str | None) -> EncodedRequest: ...


class _Error(Protocol):
    def __call__(
        self,
        status: int,
        message: str,
        *,
        rule: Rule,
        param: str | None = None,
        code: str | None = None,
        message_index: int | None = None,
    ) -> ErrorResponse: ...


@dataclass(frozen=True)
class Jobs:
    """The functions that do a wire format's work, as its modules define them."""

    encode_request: _EncodeRequest
    decode_response: Callable[[Any], Response]
    stream_decoder: Callable[[], StreamDecoder]
    encode_response: Callable[[ModelTurn, Conversation], dict[str, Any]]
    encode_stream: Callable[[ModelTurn, Conversation], list[bytes]]
    error: _Error
    """The provider's error envelope."""


class Bound(WireFormat):
    """A `WireFormat` whose contract methods forward to its `jobs`."""

    jobs: ClassVar[Jobs]

    def encode_request(self, request: Request, *, stream: bool, api_key: str | None) -> EncodedRequest:
        return self.jobs.encode_request(request, stream=stream, api_key=api_key)

    def decode_response(self, data: Any) -> Response:
        return self.jobs.decode_response(data)

    def stream_decoder(self) -> StreamDecoder:
        return self.jobs.stream_decoder()

    def encode_response(self, turn: ModelTurn, conversation: Conversation) -> dict[str, Any]:
        return self.jobs.encode_response(turn, conversation)

    def encode_stream(self, turn: ModelTurn, conversation: Conversation) -> list[bytes]:
        return self.jobs.encode_stream(turn, conversation)

    def error(
        self,
        status: int,
        message: str,
        *,
        rule: Rule,
        param: str | None = None,
        code: str | None = None,
        message_index: int | None = None,
    ) -> ErrorResponse:
        return self.jobs.error(status, message, rule=rule, param=param, code=code, message_index=message_index)
