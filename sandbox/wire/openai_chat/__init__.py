"""OpenAI Chat Completions (`POST /v1/chat/completions`), both sides of the wire.

Shapes follow shared/reference/wire-openai.md sections 2 and 4: tool calls travel as
`assistant.tool_calls[]` with arguments as a JSON *string*, each result is its own `tool` message, and
streams are `data:`-only SSE frames ending in `data: [DONE]`, framed like the recorded gpt-4o streams.

This module only binds the jobs into one `WireFormat`; each lives in a module of its own:
`_client` (the skyl client: request out, answer in, whole or streamed), `_validate` and `_pairing`
(the API's checks, in its order), `_parse` (a request read into the neutral model), `_encode` (the
completion, its stream, the error envelope).
"""

from __future__ import annotations

from typing import Any

from ..._types import Request, Response
from .._base import Conversation, EncodedRequest, ModelTurn, Rule, StreamDecoder, WireError, WireFormat, stable_token
from .._openai import openai_request_headers
from . import _client, _encode, _parse

__all__ = ["WIRE", "OpenAIChat"]


class OpenAIChat(WireFormat):
    """Chat Completions: the format most "OpenAI-compatible" servers copy."""

    name = "openai"
    base_url = "https://api.openai.com/v1"
    path = _client.PATH
    stream_media_type = "text/event-stream; charset=utf-8"

    def request_headers(self, request_digest: str) -> dict[str, str]:
        return openai_request_headers(request_digest)

    # -- client side ---------------------------------------------------------------------------

    def encode_request(self, request: Request, *, stream: bool, api_key: str | None) -> EncodedRequest:
        return _client.encode_request(request, stream=stream, api_key=api_key)

    def decode_response(self, data: Any) -> Response:
        return _client.decode_response(data)

    def stream_decoder(self) -> StreamDecoder:
        return _client.ChatStreamDecoder()

    # -- fake side -----------------------------------------------------------------------------

    def parse_request(self, body: bytes, *, path_model: str | None, path_stream: bool) -> Conversation:
        """The request as OpenAI reads it; the model and stream flag live in the body, not the path."""
        return _parse.parse_request(body)

    def call_id(self, seed: str) -> str:
        return "call_" + stable_token(f"call:{seed}", 24)

    def encode_response(self, turn: ModelTurn, conversation: Conversation) -> dict[str, Any]:
        return _encode.encode_response(turn, conversation)

    def encode_stream(self, turn: ModelTurn, conversation: Conversation) -> list[bytes]:
        return _encode.encode_stream(turn, conversation)

    def error(
        self,
        status: int,
        message: str,
        *,
        rule: Rule,
        param: str | None = None,
        code: str | None = None,
        message_index: int | None = None,
    ) -> WireError:
        return _encode.error(status, message, rule=rule, param=param, code=code, message_index=message_index)


WIRE = OpenAIChat()
