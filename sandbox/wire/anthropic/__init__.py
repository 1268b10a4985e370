"""The Anthropic Messages wire format (`POST /v1/messages`), on both sides of the wire.

Tool calls are `tool_use` content blocks of the assistant turn; their answers are `tool_result`
blocks that must open the next user turn. The neutral model keeps one `tool` message per result, so
the client merges consecutive tool messages (and a user message right after them) into one user
turn, and the fake splits that turn again.

This module only binds the jobs into one `WireFormat`; each lives in a module of its own: `_client` (the
skyl client: request out, message in, whole or streamed), `_body`, `_validate` and `_rules` (the API's
checks, in its order), `_parse` (a request read into the neutral model), `_encode` (the message, its
stream, the error envelope), `_reasoning` (thinking blocks and their echo rules), `_thread` (a message
thread's walk, kept for its continuation).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...messages._types import Reasoning
from .._base import BASE58, Conversation, ErrorResponse, stable_token
from .._bound import Bound, Jobs
from . import _client, _encode, _parse, _reasoning
from ._thread import Thread, Walk, continue_thread, thread_after, walk_thread

__all__ = ["WIRE", "Anthropic", "Thread", "Walk", "continue_thread", "thread_after", "walk_thread"]


class Anthropic(Bound):
    """Anthropic Messages: `POST https://api.anthropic.com/v1/messages`."""

    name = _client.PROVIDER
    base_url = "https://api.anthropic.com"
    stream_media_type = "text/event-stream; charset=utf-8"  # [CAP C3]
    jobs = Jobs(
        encode_request=_client.encode_request,
        decode_response=_client.decode_response,
        stream_decoder=_client.MessagesStreamDecoder,
        encode_response=_encode.encode_response,
        encode_stream=_encode.encode_stream,
        error=_encode.error,
    )

    def request_headers(self, request_digest: str) -> dict[str, str]:
        """`request-id`, which the SDK reads into `message._request_id` and `exc.request_id` (reference A.5)."""
        return {"request-id": _encode.request_id(request_digest)}

    def identified_error_body(self, error: ErrorResponse, request_digest: str) -> bytes:
        return _encode.identified_error_body(error, request_digest)

    def parse_request(self, body: bytes, *, path_model: str | None, path_stream: bool) -> Conversation:
        """The request as Anthropic reads it; the model and stream flag live in the body, not the path."""
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


WIRE = Anthropic()
