"""The fake side reading a Chat Completions request: the API's checks (`_validate`, then `_pairing`),
then the body in the neutral model. Touches only request bytes; raises nothing but `ErrorResponse`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...messages._types import Message, Text, Tool, ToolCall, ToolResult
from .._base import (
    Conversation,
)
from .._openai import call_arguments
from ._encode import error
from ._pairing import check_pairing
from ._validate import Rejection, check_request, load_body

__all__ = ["checked", "neutral_message", "parse_request"]


def parse_request(body: bytes) -> Conversation:
    """The request as OpenAI reads it; the model and stream flag live in the body, not the path."""
    try:
        return checked(load_body(body))
    except Rejection as problem:
        raise error(
            400,
            problem.message,
            rule=problem.rule,
            param=problem.param,
            code=problem.code,
            message_index=problem.index,
        ) from None


def checked(data: dict[str, Any]) -> Conversation:
    """`data` through the API's checks in its order (`Rejection` for the first problem), then made neutral."""
    check_request(data)
    check_pairing(data["messages"])
    messages: list[dict[str, Any]] = data["messages"]
    return Conversation(
        model=data["model"],
        messages=[neutral_message(message) for message in messages],
        paths=[f"messages[{index}]" for index in range(len(messages))],
        tools=[_neutral_tool(tool["function"]) for tool in data.get("tools") or ()],
        tool_choice=_normalise_tool_choice(data.get("tool_choice")),
        stream=data.get("stream") is True,
        raw=data,
        cloud=None,
    )


def _texts(content: Any) -> list[Text]:
    """Text parts of validated content; images and audio have no neutral form and are dropped."""
    if content is None:
        return []
    if isinstance(content, str):
        return [Text(content)]
    return [Text(part["text"]) for part in content if part["type"] == "text"]


def neutral_message(message: Mapping[str, Any]) -> Message:
    role = message["role"]
    texts = _texts(message.get("content"))
    if role in ("system", "developer"):
        return Message("system", texts)
    if role == "user":
        return Message("user", texts)
    content = "".join(part.text for part in texts)
    if role == "tool":
        return Message("tool", [ToolResult(message["tool_call_id"], content)])
    if role == "function":
        # The deprecated function role pairs a result with a call by function name.
        return Message("tool", [ToolResult(message["name"], content)])
    calls = [_neutral_call(call) for call in message.get("tool_calls") or ()]
    return Message("assistant", [*([Text(content)] if content else []), *calls])


def _neutral_call(call: Mapping[str, Any]) -> ToolCall:
    """A replayed call. Arguments that are not a JSON object are accepted, as OpenAI accepts them
    (reference C15), and read as no arguments."""
    function = call["function"]
    return ToolCall(call["id"], function["name"], call_arguments(function["arguments"]))


def _neutral_tool(function: Mapping[str, Any]) -> Tool:
    parameters = function.get("parameters")
    if parameters is None:
        return Tool(function["name"], function.get("description") or "")
    return Tool(name=function["name"], description=function.get("description") or "", parameters=parameters)


def _normalise_tool_choice(choice: Any) -> str | None:
    """`auto`/`none`/`required`, or the forced tool's name; allowed_tools reads as its mode."""
    if choice is None or isinstance(choice, str):
        return choice
    kind = choice["type"]
    return str(choice[kind]["mode" if kind == "allowed_tools" else "name"])
