"""The fake side reading a Messages request: the JSON and the schema (`_body`, `_validate`), the
rules after it (`_rules`, `_reasoning`), then the body in the neutral model, one `tool` message per
result. Touches only request bytes; raises nothing but `ErrorResponse`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ...messages._types import Message, Part, Role, Text, ToolCall, ToolResult
from .._base import (
    Conversation,
)
from ._body import Block, Body, Rejection, fail, load_json
from ._encode import error
from ._reasoning import check_final_turn, decode_block
from ._rules import check_rules
from ._validate import validate_schema

__all__ = ["parse_body", "parse_count_tokens", "parse_request", "to_neutral"]

_NOT_COUNTED = ("max_tokens", "stream", "stop_sequences", "temperature", "top_p", "top_k", "metadata", "service_tier")
"""Messages fields that `POST /v1/messages/count_tokens` does not take (the SDK's
`MessageCountTokensParams` has none of them): refused as any unknown field is."""


def parse_request(body: bytes) -> Conversation:
    return parse_body(body)[0]


def parse_count_tokens(body: bytes) -> Conversation:
    """A `count_tokens` body, checked as a messages request is (the same fields and turn rules),
    without `max_tokens` and the other fields that only shape an answer."""
    return parse_body(body, counting=True)[0]


def parse_body(body: bytes, *, counting: bool = False) -> tuple[Conversation, Body]:
    """`parse_request`, and the checked body it read (what a thread's walk goes on from: `_thread`)."""
    try:
        data = load_json(body)
        if counting and isinstance(data, dict):
            for key in _NOT_COUNTED:
                if key in data:
                    fail(key, "Extra inputs are not permitted")
            data = {**data, "max_tokens": 0}
        checked = validate_schema(data)
    except Rejection as problem:
        raise error(400, problem.message, rule=problem.rule) from None
    neutral = to_neutral(checked)
    try:
        check_final_turn(data)
        check_rules(checked)
    except Rejection as problem:
        raise error(400, problem.message, rule=problem.rule, message_index=neutral.index_of(problem)) from None
    conversation = Conversation(
        model=checked.model,
        messages=neutral.messages,
        paths=neutral.paths,
        tools=checked.tools,
        tool_choice=checked.tool_choice,
        stream=checked.stream,
        raw=data,
        cloud=None,
    )
    return conversation, checked


@dataclass
class _Neutral:
    """The request in the neutral model, and where each wire message and result landed in it."""

    messages: list[Message] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    first: list[int] = field(default_factory=list)
    """Wire message i -> the index of its first neutral message."""
    results: dict[tuple[int, int], int] = field(default_factory=dict)
    """(wire message, block) of a `tool_result` -> its neutral `tool` message."""

    def add(self, message: Message, path: str) -> None:
        self.messages.append(message)
        self.paths.append(path)

    def index_of(self, error: Rejection) -> int | None:
        if error.message_index is None:
            return None
        if error.block_index is not None and (error.message_index, error.block_index) in self.results:
            return self.results[error.message_index, error.block_index]
        return self.first[error.message_index]


_ROLES: dict[str, Role] = {"assistant": "assistant", "system": "system"}


def _parts(blocks: Sequence[Block]) -> list[Part]:
    parts: list[Part] = []
    for block in blocks:
        if block.kind == "text":
            parts.append(Text(block.text))
        elif block.kind == "tool_use":
            parts.append(ToolCall(block.id, block.name, block.input))
        elif block.kind == "tool_result":
            parts.append(ToolResult(block.tool_use_id, block.content, block.is_error))
        elif block.reasoning is not None:
            parts.append(decode_block(block.reasoning))
    return parts  # images, documents, server-tool blocks: nothing the neutral model keeps


def to_neutral(body: Body, *, offset: int = 0) -> _Neutral:
    """`body` in the neutral model. `offset`: the index of `body.messages[0]` in the whole request (a
    thread's continuation, whose kept messages, system included, come before it)."""
    neutral = _Neutral()
    if body.system and not offset:
        neutral.add(Message("system", [Text(text) for text in body.system]), "system")
    for index, message in enumerate(body.messages, offset):
        path = f"messages[{index}]"
        neutral.first.append(len(neutral.messages))
        if message.role != "user":
            neutral.add(Message(_ROLES[message.role], _parts(message.blocks)), path)
            continue
        others = []
        for position, block in enumerate(message.blocks):
            if block.kind == "tool_result":
                neutral.results[index, position] = len(neutral.messages)
                neutral.add(Message("tool", _parts([block])), path)
            else:
                others.append(block)
        if others or not any(block.kind == "tool_result" for block in message.blocks):
            neutral.add(Message("user", _parts(others)), path)
    return neutral
