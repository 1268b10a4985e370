"""The Anthropic Messages wire format (`POST /v1/messages`), on both sides of the wire.

Tool calls are `tool_use` content blocks of the assistant turn; their answers are `tool_result`
blocks that must open the next user turn. The neutral model keeps one `tool` message per result, so
the client merges consecutive tool messages (and a user message right after them) into one user
turn, and the fake splits that turn again.

This module only binds the jobs into one `WireFormat`; each lives in a module of its own:
`_client` (the skyl client: request out, message in, whole or streamed), `_body`, `_validate` and
`_rules` (the API's checks, in its order), `_parse` (a request read into the neutral model),
`_encode` (the message, its stream, the error envelope), `_reasoning` (thinking blocks and their
echo rules).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._types import Reasoning, Request, Response
from .._base import (
    BASE58,
    Conversation,
    EncodedRequest,
    ModelTurn,
    Rule,
    StreamDecoder,
    WireError,
    WireFormat,
    stable_token,
)
from . import _client, _encode, _parse, _reasoning

__all__ = ["WIRE", "Anthropic"]


class Anthropic(WireFormat):
    """Anthropic Messages: `POST https://api.anthropic.com/v1/messages`."""

    name = _client.PROVIDER
    base_url = "https://api.anthropic.com"
    stream_media_type = "text/event-stream; charset=utf-8"  # [CAP C3]

    def request_headers(self, request_digest: str) -> dict[str, str]:
        """`request-id`, which the SDK reads into `message._request_id` and `exc.request_id` (reference A.5)."""
        return {"request-id": _encode.request_id(request_digest)}

    def identified_error_body(self, error: WireError, request_digest: str) -> bytes:
        return _encode.identified_error_body(error, request_digest)

    # -- client side -------------------------------------------------------------------------------

    def encode_request(self, request: Request, *, stream: bool, api_key: str | None) -> EncodedRequest:
        return _client.encode_request(request, stream=stream, api_key=api_key)

    def decode_response(self, data: Any) -> Response:
        return _client.decode_response(data)

    def stream_decoder(self) -> StreamDecoder:
        return _client.MessagesStreamDecoder()

    # -- fake side ---------------------------------------------------------------------------------

    def parse_request(self, body: bytes, *, path_model: str | None, path_stream: bool) -> Conversation:
        return _parse.parse_request(body)

    def call_id(self, seed: str) -> str:
        return "toolu_01" + stable_token(seed, 22, BASE58)

    def reasoning_parts(
        self, seed: str, thought: str, conversation: Conversation, *, redacted: bool, acting: bool
    ) -> list[Reasoning]:
        return _reasoning.thinking_blocks(seed, thought, conversation, redacted=redacted)

    def check_reasoning(
        self, conversation: Conversation, index: int, expected: Sequence[Reasoning], *, last: bool
    ) -> None:
        _reasoning.check_echo(conversation, index, expected, error=self.error)

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
        """Anthropic's envelope has no `param` or `code`; both are accepted and dropped."""
        return _encode.error(status, message, rule=rule, param=param, code=code, message_index=message_index)


WIRE = Anthropic()
