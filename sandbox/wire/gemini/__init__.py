"""Gemini `generateContent`: both sides of the wire.

Gemini differs from the other three formats in one way that shapes everything here: real traffic
carries no call ids. A model turn's `functionCall` parts are answered by one user turn holding the
same number of `functionResponse` parts, paired by position. So:

- the client invents stable ids (`gcall_<token>_<k>`) for the skyl model and never sends them back;
- the fake numbers calls by position (`gemini:<content>:<k>`) and gives each response the id of the
  call at its position in the turn before (see `_parse._pair` for responses whose name says otherwise).

This module only binds the jobs into one `WireFormat`; each lives in a module of its own:
`_client` (the skyl client: request out, response in, whole or streamed), `_body`, `_proto` and
`_validate` (the API's three layers of checks, in its order), `_parse` (a request read into the
neutral model), `_encode` (the response, its stream, Google's error envelope), `_reasoning` (thought
parts, thought signatures and their echo rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._types import Reasoning, Request, Response
from .._base import Conversation, EncodedRequest, ModelTurn, Rule, StreamDecoder, WireError, WireFormat, stable_token
from . import _client, _encode, _parse, _reasoning

__all__ = ["WIRE", "Gemini"]


class Gemini(WireFormat):
    name = "gemini"
    base_url = "https://generativelanguage.googleapis.com"
    media_type = "application/json; charset=UTF-8"  # reference B.7, like its error bodies
    has_call_ids = False
    error_kind_key = "status"

    def answer_headers(self, request_digest: str, *, stream: bool) -> dict[str, str]:
        return _encode.answer_headers(request_digest, stream=stream)

    # -- client side ---------------------------------------------------------------------------

    def encode_request(self, request: Request, *, stream: bool, api_key: str | None) -> EncodedRequest:
        return _client.encode_request(request, stream=stream, api_key=api_key)

    def decode_response(self, data: Any) -> Response:
        return _client.decode_response(data)

    def stream_decoder(self) -> StreamDecoder:
        return _client.GeminiStream()

    # -- fake side -----------------------------------------------------------------------------

    def parse_request(self, body: bytes, *, path_model: str | None, path_stream: bool) -> Conversation:
        return _parse.parse_request(body, path_model=path_model, path_stream=path_stream)

    def call_id(self, seed: str) -> str:
        """Gemini has no call ids: this placeholder names a scripted call inside the sandbox only."""
        return f"gemini-call-{stable_token(seed, 12)}"

    def reasoning_parts(
        self, seed: str, thought: str, conversation: Conversation, *, redacted: bool, acting: bool
    ) -> list[Reasoning]:
        return _reasoning.reasoning_parts(seed, thought, conversation, acting=acting)

    def check_reasoning(
        self, conversation: Conversation, index: int, expected: Sequence[Reasoning], *, last: bool
    ) -> None:
        _reasoning.check_echo(conversation, index, expected, error=self.error)

    def encode_response(self, turn: ModelTurn, conversation: Conversation) -> dict[str, Any]:
        return _encode.encode_response(turn, conversation)

    def encode_stream(self, turn: ModelTurn, conversation: Conversation) -> list[bytes]:
        """One complete response per chunk: text in small fragments, then every call whole in the
        final chunk (Gemini neither splits arguments nor spreads parallel calls over chunks, and
        google-genai's chat keeps each chunk as its own history turn), `finishReason` on the last.
        A thinking model's call chunk carries the signature and no `finishReason`; an empty text part
        follows with it, the Gemini 3 shape."""
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
        """Google's envelope, pretty-printed as the real API sends it (see `_encode.error`)."""
        return _encode.error(status, message, rule=rule, param=param, code=code, message_index=message_index)


WIRE = Gemini()
