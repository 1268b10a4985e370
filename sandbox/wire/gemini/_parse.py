"""The fake side reading a Gemini request: the API's checks (`_validate`), then the contents in the
neutral model, each function response given the id of the call at its position in the turn before.
Touches only request bytes; raises nothing but `ErrorResponse`.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping
from typing import Any

from ...messages._types import Message, Part, Reasoning, Text, ToolCall, ToolResult
from .._base import (
    Conversation,
    ErrorResponse,
)
from ._body import ParsedRequest, Rejection, WireContent, WirePart
from ._encode import error
from ._reasoning import wire_reasoning
from ._validate import check_fields, check_order, merge_model_runs, read_request

__all__ = ["parse_request", "to_neutral"]


def parse_request(body: bytes, *, path_model: str | None, path_stream: bool) -> Conversation:
    try:
        parsed = read_request(body)
    except Rejection as rejection:
        raise _reject(rejection, []) from None
    turns, starts = merge_model_runs(parsed.contents)
    messages, paths, first = to_neutral(parsed, turns, starts)
    try:
        check_fields(parsed)
    except Rejection as rejection:
        raise _reject(rejection, first) from None
    try:
        check_order(turns)
    except Rejection as rejection:
        if rejection.content is not None:
            rejection.content = starts[rejection.content]  # the turn's first content on the wire
        raise _reject(rejection, first) from None
    return Conversation(
        model=path_model or parsed.model or "",
        messages=messages,
        paths=paths,
        tools=parsed.tools,
        tool_choice=parsed.tool_choice,
        stream=path_stream,
        raw=parsed.raw,
        cloud=None,
    )


def _reject(rejection: Rejection, first: list[int]) -> ErrorResponse:
    """`first[i]` is the neutral index of `contents[i]`'s first message (the transcript marks it)."""
    index = rejection.content
    neutral = first[index] if index is not None and index < len(first) else None
    return error(400, rejection.message, rule=rejection.rule, param=rejection.field, message_index=neutral)


# -- fake side -----------------------------------------------------------------------------------------


def to_neutral(
    parsed: ParsedRequest, turns: list[WireContent], starts: list[int]
) -> tuple[list[Message], list[str], list[int]]:
    """Neutral messages, their wire paths, and the first neutral index of each content on the wire.
    `turns` are the contents with runs of model contents merged, `starts[i]` where turn i begins."""
    messages: list[Message] = []
    paths: list[str] = []
    first: list[int] = []
    if parsed.system_texts:
        messages.append(Message("system", [Text(text) for text in parsed.system_texts]))
        paths.append("systemInstruction")
    bounds = [*starts, len(parsed.contents)]
    for index, content in enumerate(turns):
        start, end = bounds[index], bounds[index + 1]
        first.extend([len(messages)] * (end - start))
        path = f"contents[{start}]" if end - start == 1 else f"contents[{start}..{end - 1}]"
        previous = turns[index - 1] if index else None
        for message in _content_messages(index, content, previous):
            messages.append(message)
            paths.append(path)
    return messages, paths, first


def _content_messages(index: int, content: WireContent, previous: WireContent | None) -> list[Message]:
    """A model turn is one assistant message; a user turn is one tool message per functionResponse,
    then a user message for its text."""
    if content.count("call") or (content.effective_role == "model" and not content.count("response")):
        parts: list[Part] = []
        calls = 0
        for part in content.parts:
            reasoning = _reasoning(part)
            if reasoning is not None:
                parts.append(reasoning)
            if part.kind == "call":
                parts.append(_fake_call(index, calls, part))
                calls += 1
            elif part.kind == "text" and not part.thought:
                parts.append(Text(part.text))
        return [Message("assistant", parts)]
    responses = [part for part in content.parts if part.kind == "response"]
    called = [part.name for part in previous.parts if part.kind == "call"] if previous else []
    ids = _pair(index - 1, called, [part.name for part in responses])
    messages = [Message("tool", [_result(call_id, part.payload)]) for call_id, part in zip(ids, responses, strict=True)]
    texts = [Text(part.text) for part in content.parts if part.kind == "text" and not part.thought]
    if texts or not responses:
        messages.append(Message("user", texts))
    return messages


def _pair(call_turn: int, called: list[str], answered: list[str]) -> list[str]:
    """The call each response answers. The API pairs by count, so position decides; but a response
    whose name differs from the call at its position answers the first unanswered call of that name
    (results appended in another order), or no call at all (an invented id): the sandbox then
    reports the call left without a result instead of silently mispairing."""
    unused: dict[str, deque[int]] = {}  # per name, the positions of its calls in order: linear, not quadratic
    for position, name in enumerate(called):
        unused.setdefault(name, deque()).append(position)
    used: set[int] = set()
    ids = []
    for position, name in enumerate(answered):
        if position < len(called) and called[position] == name and position not in used:
            match: int | None = position
        else:
            queue = unused.get(name)
            while queue and queue[0] in used:
                queue.popleft()
            match = queue[0] if queue else None
        if match is None:
            ids.append(f"gemini:{call_turn}:unmatched:{position}")
        else:
            used.add(match)
            ids.append(f"gemini:{call_turn}:{match}")
    return ids


def _fake_call(index: int, position: int, part: WirePart) -> ToolCall:
    return ToolCall(f"gemini:{index}:{position}", part.name, dict(part.payload))


def _reasoning(part: WirePart) -> Reasoning | None:
    """A model part's thought or signature as the skyl part before it (the echo rule reads the wire)."""
    if part.kind == "text" and part.thought:
        thought: dict[str, Any] = {"text": part.text, "thought": True}
        if part.signature:
            thought["thoughtSignature"] = part.signature
        return wire_reasoning(thought)
    return wire_reasoning({"thoughtSignature": part.signature}) if part.signature else None


_RESULT_KEYS = {"result": False, "output": False, "return_value": False, "content": False, "error": True}
"""How clients wrap a function's return value in `functionResponse.response`, which must be an object:
`result`/`output`/`error` (google-genai and the docs), `return_value` (pydantic-ai), `content`
(litellm; the Vercel AI SDK adds the function's `name` beside it)."""


def _result(call_id: str, response: Mapping[str, Any]) -> ToolResult:
    """The tool's answer unwrapped from its envelope (`error` marks a failure); any other object is
    passed on as its JSON text. A list of text parts is read as its text, as a model reads it:
    strands-agents sends `{"output": [{"text": "18C, clear"}]}`."""
    wrapper = [key for key in response if key != "name"]
    if len(wrapper) == 1 and wrapper[0] in _RESULT_KEYS:
        value = response[wrapper[0]]
        texts = _texts(value)
        text = (
            texts if texts is not None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        )
        return ToolResult(call_id, text, _RESULT_KEYS[wrapper[0]])
    return ToolResult(call_id, json.dumps(dict(response), ensure_ascii=False))


def _texts(value: Any) -> str | None:
    """The text of a non-empty list of `{"text": ...}` parts, one line each; None for anything else."""
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(part, Mapping) and set(part) == {"text"} and isinstance(part["text"], str) for part in value):
        return None
    return "\n".join(part["text"] for part in value)
