"""The OpenAI Responses API (`POST /v1/responses`), on both sides of the wire.

Shapes checked against the openai 3.57 SDK types.
The Responses API has no messages, only a flat list of items: an assistant turn is a `message`
item (its prose) plus one `function_call` item per call, and each result is a
`function_call_output` item paired with its call by `call_id`, not by position. The neutral model
folds the assistant items that follow each other back into one assistant message.

This module only binds the jobs into one `WireFormat`; each lives in a module of its own:
`_client` (the skyl client: items out, response in, whole or streamed), `_validate` (the API's
texts and field checks) and `_parse` (one walk over a request, in the API's order, its state in
`_turns`; `_chain` goes on from it for a continuation), `_encode` (the response object), `_stream`
(its event stream), `_reasoning` (reasoning items and their echo rules).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...messages._types import Reasoning
from .._base import Conversation, ModelTurn, stable_token
from .._bound import Bound, Jobs
from .._openai import openai_request_headers
from . import _client, _encode, _parse, _reasoning, _stream
from ._chain import LaterWalk, walk_answer
from ._parse import parse_continuing
from ._turns import Walked
from ._validate import wire_error

__all__ = ["WIRE", "LaterWalk", "OpenAIResponses", "Walked", "parse_continuing", "walk_answer"]


class OpenAIResponses(Bound):
    """`provider="openai-responses"`: OpenAI's Responses API."""

    name = _client.PROVIDER
    base_url = "https://api.openai.com/v1"
    stream_media_type = "text/event-stream; charset=utf-8"
    jobs = Jobs(
        encode_request=_client.encode_request,
        decode_response=_client.decode_response,
        stream_decoder=_client.ResponsesStreamDecoder,
        encode_response=_encode.encode_response,
        encode_stream=_stream.encode_stream,
        error=wire_error,
    )

    def request_headers(self, request_digest: str) -> dict[str, str]:
        return openai_request_headers(request_digest)

    def parse_request(self, body: bytes, *, path_model: str | None, path_stream: bool) -> Conversation:
        """The request as OpenAI reads it; the model and stream flag live in the body, not the path."""
        return _parse.parse_request(body)

    def call_id(self, seed: str) -> str:
        return "call_" + stable_token(seed, 24)

    def encode_stream_answer(
        self, turn: ModelTurn, conversation: Conversation
    ) -> tuple[list[bytes], dict[str, Any] | None]:
        return _stream.stream_answer(turn, conversation)

    def reasoning_parts(
        self, seed: str, thought: str, conversation: Conversation, *, redacted: bool, acting: bool
    ) -> list[Reasoning]:
        return [_reasoning.reasoning_item(seed, thought, conversation)]

    def check_reasoning(
        self, conversation: Conversation, index: int, expected: Sequence[Reasoning], *, last: bool
    ) -> None:
        _reasoning.check_echo(conversation, index, expected)


WIRE = OpenAIResponses()
