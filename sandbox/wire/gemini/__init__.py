"""Gemini `generateContent`: both sides of the wire.

Gemini differs from the other three formats in one way that shapes everything here: real traffic
carries no call ids. A model turn's `functionCall` parts are answered by one user turn holding the
same number of `functionResponse` parts, paired by position. So:

- the client invents stable ids (`gcall_<token>_<k>`) for the skyl model and never sends them back;
- the fake numbers calls by position (`gemini:<content>:<k>`) and gives each response the id of the
  call at its position in the turn before (see `_parse._pair` for responses whose name says otherwise).

This module only binds the jobs into one `WireFormat`; each lives in a module of its own: `_client` (the
skyl client: request out, response in, whole or streamed), `_body`, `_jsontext`, `_proto` and
`_validate` (the API's three layers of checks, in its order), `_parse` (a request read into the neutral
model), `_encode` (the response, its stream, Google's error envelope), `_reasoning` (thought parts,
thought signatures and their echo rule).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...messages._types import Reasoning
from .._base import Conversation, stable_token
from .._bound import Bound, Jobs
from . import _client, _encode, _parse, _reasoning

__all__ = ["WIRE", "Gemini"]


class Gemini(Bound):
    name = "gemini"
    base_url = "https://generativelanguage.googleapis.com"
    media_type = "application/json; charset=UTF-8"  # reference B.7, like its error bodies
    has_call_ids = False
    error_kind_key = "status"
    jobs = Jobs(
        encode_request=_client.encode_request,
        decode_response=_client.decode_response,
        stream_decoder=_client.GeminiStream,
        encode_response=_encode.encode_response,
        encode_stream=_encode.encode_stream,
        error=_encode.error,
    )

    def answer_headers(self, request_digest: str, *, stream: bool) -> dict[str, str]:
        return _encode.answer_headers(request_digest, stream=stream)

    def parse_request(self, body: bytes, *, path_model: str | None, path_stream: bool) -> Conversation:
        """The model and the stream flag come from the URL (`models/<model>:streamGenerateContent`)."""
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


WIRE = Gemini()
