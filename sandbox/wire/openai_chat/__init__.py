"""OpenAI Chat Completions (`POST /v1/chat/completions`), both sides of the wire.

Tool calls travel as `assistant.tool_calls[]` with arguments as a JSON *string*, each result is its own
`tool` message, and streams are `data:`-only SSE frames ending in `data: [DONE]`, framed like the
recorded gpt-4o streams.

This module only binds the jobs into one `WireFormat`; each lives in a module of its own:
`_client` (the skyl client: request out, answer in, whole or streamed), `_validate` and `_pairing`
(the API's checks, in its order), `_parse` (a request read into the neutral model), `_encode` (the
completion, its stream, the error envelope).
"""

from __future__ import annotations

from .._base import Conversation, stable_token
from .._bound import Bound, Jobs
from .._openai import openai_request_headers
from . import _client, _encode, _parse

__all__ = ["WIRE", "OpenAIChat"]


class OpenAIChat(Bound):
    """Chat Completions: the format most "OpenAI-compatible" servers copy."""

    name = "openai"
    base_url = "https://api.openai.com/v1"
    path = _client.PATH
    stream_media_type = "text/event-stream; charset=utf-8"
    jobs = Jobs(
        encode_request=_client.encode_request,
        decode_response=_client.decode_response,
        stream_decoder=_client.ChatStreamDecoder,
        encode_response=_encode.encode_response,
        encode_stream=_encode.encode_stream,
        error=_encode.error,
    )

    def request_headers(self, request_digest: str) -> dict[str, str]:
        return openai_request_headers(request_digest)

    def parse_request(self, body: bytes, *, path_model: str | None, path_stream: bool) -> Conversation:
        """The request as OpenAI reads it; the model and stream flag live in the body, not the path."""
        return _parse.parse_request(body)

    def call_id(self, seed: str) -> str:
        return "call_" + stable_token(f"call:{seed}", 24)


WIRE = OpenAIChat()
