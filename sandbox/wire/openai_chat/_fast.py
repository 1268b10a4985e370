"""One walk over a decoded Chat Completions body in the shapes SDKs and frameworks send, checking what
`_validate.check_request` and `_pairing.check_pairing` check and building the neutral conversation
that `_parse` would build from it, in the same pass.

Why: the full checker costs a function call, an error path and often an f-string per field; this walk
costs a type test. It never decides that a body is wrong: whatever it does not verify itself (an
unknown or unusual key, a type outside the common shapes, a rule broken) makes it decline (None), and
the full parse then reads the body from the start and says what is wrong, so every error text has one
source. Touches only the decoded body; builds no error.
"""

from __future__ import annotations

from typing import Any

from ...messages._types import Message, Part, Role, Tool, wire_call
from .._base import Conversation
from .._openai import call_arguments
from .._walked import result_message, text_message, text_part, walked_message, walked_request, walked_tool
from ._validate import _NAME_RE, KNOWN_FIELDS, MAX_CALL_ID, MAX_DESCRIPTION, MAX_NAME, TOOL_CHOICES

__all__ = ["fast_parse"]

_TYPES: dict[str, tuple[type, ...]] = {
    "stream": (bool,),
    "stream_options": (dict,),
    "parallel_tool_calls": (bool,),
    "max_tokens": (int,),
    "max_completion_tokens": (int,),
    "temperature": (int, float),
    "stop": (str, list),
    "tools": (list,),
    "tool_choice": (str, dict),
}
"""`_validate._TOP_LEVEL_TYPES` as exact types: a decoded body holds no subclasses, and `bool` is
listed only where the full check accepts it (JSON true is not a number there)."""
_KINDS: dict[str, tuple[type, ...]] = {field: _TYPES.get(field, ()) for field in KNOWN_FIELDS}
"""Every known field's exact types (`_TYPES`), empty for a field the walk takes any value of."""
_SIMPLE_ROLES: dict[str, Role] = {"system": "system", "developer": "system", "user": "user"}
_PATHS = tuple(f"messages[{index}]" for index in range(64))


def fast_parse(data: dict[str, Any]) -> Conversation | None:
    """The conversation `_parse.parse_request` returns for `data`, or None where this walk cannot
    vouch that the full check passes it."""
    for key, value in data.items():
        kinds = _KINDS.get(key)
        if kinds is None:
            return None  # a field openai's SDK does not know
        if value is not None and kinds and type(value) not in kinds:
            return None
    model = data.get("model")
    messages = data.get("messages")
    if type(model) is not str or not model or type(messages) is not list or not messages:
        return None
    if data.get("stream_options") is not None and data.get("stream") is not True:
        return None
    tools_value = data.get("tools")
    tools = _tools(tools_value) if tools_value is not None else []
    if tools is None:
        return None
    choice = data.get("tool_choice")
    if choice is not None:
        if tools_value is None:
            return None
        if type(choice) is str:
            if choice not in TOOL_CHOICES:
                return None
        else:
            choice = _forced(choice)
            if choice is None:
                return None
    if data.get("parallel_tool_calls") is not None and tools_value is None:
        return None
    neutral = _messages(messages)
    if neutral is None:
        return None
    count = len(messages)
    return walked_request(
        model,
        neutral,
        list(_PATHS[:count]) if count <= len(_PATHS) else [f"messages[{index}]" for index in range(count)],
        tools,
        choice,
        data.get("stream") is True,
        data,
    )


def _messages(messages: list[Any]) -> list[Message] | None:
    """Each message checked and made neutral, the pairing rules (C1-C5) followed as they go."""
    neutral: list[Message] = []
    open_ids: list[str] = []  # the open assistant turn's call ids, in order
    answered: set[str] = set()
    for message in messages:
        if type(message) is not dict:
            return None
        role = message.get("role")
        content = message.get("content")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if type(call_id) is not str or call_id in answered or call_id not in open_ids:
                return None
            text = content if type(content) is str else _joined(content)
            if text is None:
                return None
            answered.add(call_id)
            neutral.append(result_message(call_id, text, False))
            continue
        if open_ids:
            if len(answered) != len(set(open_ids)):
                return None  # a call without its tool message
            open_ids, answered = [], set()
        simple = _SIMPLE_ROLES.get(role) if type(role) is str else None
        if simple is not None:
            if type(content) is str:
                neutral.append(text_message(simple, content))
                continue
            texts = _texts(content)
            if texts is None:
                return None
            neutral.append(walked_message(simple, tuple(texts)))
            continue
        if role != "assistant" or message.get("function_call") is not None:
            return None  # the deprecated function role and function_call: the full parse reads them
        parts = _assistant(message, content, open_ids)
        if parts is None:
            return None
        neutral.append(walked_message("assistant", tuple(parts)))
    if open_ids and len(answered) != len(set(open_ids)):
        return None
    return neutral


def _assistant(message: dict[str, Any], content: Any, ids: list[str]) -> list[Part] | None:
    """An assistant turn's text and calls, each call's id put in `ids` (empty when called: the turn
    before is closed); None for anything the full check might refuse."""
    calls = message.get("tool_calls")
    if content is None:
        if calls is None:
            return None  # C8: content null without calls
        text = ""
    elif type(content) is str:
        text = content
    else:
        joined = _joined(content)
        if joined is None:
            return None
        text = joined
    parts: list[Part] = [text_part(text)] if text else []
    if calls is None:
        return parts
    if type(calls) is not list or not calls:
        return None
    for call in calls:
        if type(call) is not dict or call.get("type") != "function":
            return None
        call_id = call.get("id")
        function = call.get("function")
        if type(call_id) is not str or len(call_id) > MAX_CALL_ID or type(function) is not dict:
            return None
        name = function.get("name")
        arguments = function.get("arguments")
        if type(arguments) is not str or type(name) is not str or len(name) > MAX_NAME:
            return None
        # `NAME_PATTERN` up to `MAX_NAME`: an ASCII identifier (`plain_name`'s test) passes without the
        # regex. Written out here and in `_tools`, not a helper: a call costs as much as the test.
        if not (name.isascii() and name.isidentifier() or _NAME_RE.match(name)):
            return None
        parts.append(wire_call(call_id, name, call_arguments(arguments)))
        ids.append(call_id)
    return parts


def _texts(content: Any) -> list[Part] | None:
    """A user, system or developer message's list of parts: their text parts."""
    if type(content) is not list or not content:
        return None
    texts: list[Part] = []
    for part in content:
        if type(part) is not dict:
            return None
        kind = part.get("type")
        if kind == "text":
            text = part.get("text")
            if type(text) is not str:
                return None
            texts.append(text_part(text))
        elif kind == "refusal":
            if type(part.get("refusal")) is not str:
                return None
        elif kind not in ("image_url", "input_audio", "audio", "file"):
            return None
    return texts


def _joined(content: Any) -> str | None:
    """A tool or assistant message's content as the one text it becomes."""
    texts = _texts(content)
    return None if texts is None else "".join([part.text for part in texts])  # type: ignore[union-attr]


def _tools(tools: list[Any]) -> list[Tool] | None:
    if not tools:
        return None
    neutral = []
    for tool in tools:
        if type(tool) is not dict or tool.get("type") != "function":
            return None
        function = tool.get("function")
        if type(function) is not dict:
            return None
        name = function.get("name")
        description = function.get("description")
        parameters = function.get("parameters")
        if (
            type(name) is not str
            or len(name) > MAX_NAME
            or not (name.isascii() and name.isidentifier() or _NAME_RE.match(name))
        ):
            return None
        if description is not None and (type(description) is not str or len(description) > MAX_DESCRIPTION):
            return None
        if parameters is None:
            parameters = {"type": "object", "properties": {}}
        elif type(parameters) is not dict:
            return None
        neutral.append(walked_tool(name, description or "", parameters))
    return neutral


def _forced(choice: Any) -> str | None:
    """`{"type": "function", "function": {"name": ...}}`: the forced tool's name."""
    if choice.get("type") != "function":
        return None
    function = choice.get("function")
    name = function.get("name") if type(function) is dict else None
    return name if type(name) is str else None
