"""A Messages request of the shapes SDKs and frameworks send, read in one walk: what `_parse.parse_body`
makes of it (the JSON, `_validate`'s schema, `_reasoning`'s final-turn rule, `_rules`' pairing, the
neutral model), or None for anything this walk does not verify whole itself.

Why: the full reading is many small steps (a `Block` per block, a `WireMessage` per message, merged
`_Turn`s, the neutral walk over them), about three quarters of a plain request's parse; the walk here
builds the neutral objects straight from the decoded JSON. It never words an error: on anything
unusual (a key it does not know, a lax-coerced value such as `"stream": "true"`, an image block, a
`system` message, a server tool, a `thread`, any rule broken) it declines, and the caller reads the
request the full way, which stays the one source of every error text. Touches only the request
bytes; raises nothing.
"""

from __future__ import annotations

from typing import Any

from ...messages._types import Message, Part, Tool, wire_call
from .._base import Conversation
from .._json import orjson_read
from .._walked import plain_name, result_message, text_message, text_part, walked_message, walked_request, walked_tool
from ._reasoning import _enabled, decode_block
from ._validate import _CHOICES, _ID, _KNOWN_KEYS, _TOOL_NAME

__all__ = ["fast_request"]

_CHECKED = frozenset(
    "model messages max_tokens system tools tool_choice stream stop_sequences temperature top_p top_k metadata".split()
)
_READ = frozenset(("model", "messages", "max_tokens"))
"""The keys read before the loop over the body's keys."""
_UNREAD = _KNOWN_KEYS - _CHECKED - {"thread"}
"""Known keys whose values the schema check never reads (`thinking`, `service_tier`, ...): any value
passes it, so they pass here; a `thread` goes through kept state and the full walk."""
_FLOAT_BOUND = 1e300
"""An integer `temperature` or `top_p` within this converts to a float; past it the full path decides."""
_THINKING = ("thinking", "redacted_thinking")
_THOUGHT, _REDACTED = ("thinking", "signature"), ("data",)
_PATHS = tuple(f"messages[{index}]" for index in range(64))
_HELD = len(_PATHS)
_MAX_TOOL_NAME = 128
"""`_validate._TOOL_NAME`'s length limit."""


def fast_request(body: bytes) -> Conversation | None:
    """`parse_body(body)[0]` for a request the full path accepts, read in one walk; None to decline."""
    loaded = orjson_read(body)  # None: not UTF-8, not JSON, NaN, a lone surrogate, a huge integer, too deep
    if loaded is None or type(loaded[0]) is not dict:
        return None
    data: dict[str, Any] = loaded[0]
    model, max_tokens, items = data.get("model"), data.get("max_tokens"), data.get("messages")
    if type(model) is not str or type(max_tokens) is not int or max_tokens < 0 or type(items) is not list or not items:
        return None
    system: list[str] = []
    tools: list[Tool] = []
    tool_count = 0
    choice: str | None = None
    stream = False
    for key, value in data.items():
        if key in _CHECKED:
            if value is None or key in _READ:
                continue
            if key == "system":
                read = _system(value)
                if read is None:
                    return None
                system = read
            elif key == "tools":
                if type(value) is not list:
                    return None
                read_tools = _tools(value)
                if read_tools is None:
                    return None
                tools, tool_count = read_tools, len(value)
            elif key == "tool_choice":
                choice = _tool_choice(value)
                if choice is None:
                    return None
            elif key == "stream":
                if type(value) is not bool:
                    return None
                stream = value
            elif not _plain_option(key, value):
                return None
        elif key not in _UNREAD:
            return None
    walked = _messages(items, data)
    if walked is None:
        return None
    messages, paths, has_tool_blocks = walked
    if has_tool_blocks and not tool_count:
        return None
    if system:
        messages.insert(0, walked_message("system", tuple(text_part(part) for part in system)))
        paths.insert(0, "system")
    return walked_request(model, messages, paths, tools, choice, stream, data)


def _plain_option(key: str, value: Any) -> bool:
    """`stop_sequences`, `temperature`, `top_p`, `top_k`, `metadata` as the schema takes them, unconverted."""
    if key == "stop_sequences":
        return type(value) is list and all(type(item) is str for item in value)
    if key == "top_k":
        return type(value) is int
    if key == "metadata":
        return type(value) is dict
    return type(value) is float or (type(value) is int and -_FLOAT_BOUND < value < _FLOAT_BOUND)


def _system(value: Any) -> list[str] | None:
    if type(value) is str:
        return [value] if value else []
    if type(value) is not list:
        return None
    texts = []
    for block in value:
        if type(block) is not dict or block.get("type") != "text" or type(block.get("text")) is not str:
            return None
        texts.append(block["text"])
    return texts


def _tools(items: list[Any]) -> list[Tool] | None:
    """Custom tools only (a server tool is left to the full path), with unique names."""
    tools: list[Tool] = []
    names: set[str] = set()
    for tool in items:
        if type(tool) is not dict or tool.get("type", "custom") not in ("custom", None):
            return None
        name, description, schema = tool.get("name"), tool.get("description"), tool.get("input_schema")
        if type(name) is not str or not (plain_name(name, _MAX_TOOL_NAME) or _TOOL_NAME.fullmatch(name)):
            return None
        if name in names:
            return None
        if description is not None and type(description) is not str:
            return None
        if type(schema) is not dict or schema.get("type") != "object":
            return None
        names.add(name)
        tools.append(walked_tool(name, description or "", schema))
    return tools


def _tool_choice(value: Any) -> str | None:
    if type(value) is not dict:
        return None
    tag, parallel = value.get("type"), value.get("disable_parallel_tool_use")
    if type(tag) is not str or (parallel is not None and type(parallel) is not bool):
        return None
    if tag == "tool":
        name = value.get("name")
        return name if type(name) is str else None
    return _CHOICES.get(tag)


def _messages(items: list[Any], data: dict[str, Any]) -> tuple[list[Message], list[str], bool] | None:
    """The neutral messages and their paths, and whether any block is a tool block; None if any
    message, block or rule is not one this walk verifies.

    The rules of `_rules.check_rules`, on consecutive same-role messages merged into turns as its
    `_merge` does, are kept as the walk goes: a `tool_use` must end its turn (nothing after it) and
    have a unique id; each `tool_result` answers a call of the turn before, once, and those calls'
    results must all open the next turn; a call turn must not be the last."""
    messages: list[Message] = []
    paths: list[str] = []
    role_now = ""  # the merged turn the walk is in
    calls: list[str] = []  # the calls of the assistant turn being walked
    asked: set[str] = set()  # in a user turn: the calls of the turn before it
    answered: set[str] = set()
    leading = 0  # results at the head of this user turn
    opening = True  # no other block yet in this user turn
    called = False  # a tool_use seen in this assistant turn: nothing else may follow it
    call_ids: set[str] = set()
    final: list[str] | None = None  # the kinds of the last assistant message with list content
    tool_blocks = False
    last = len(items) - 1
    for index, message in enumerate(items):
        if type(message) is not dict:
            return None
        role, content = message.get("role"), message.get("content")
        if role == "user":
            user = True
        elif role == "assistant":
            user = False
        else:
            return None
        if role != role_now:
            if user:
                asked, answered, leading, opening = set(calls), set(), 0, True
                calls, called = [], False
            elif len(asked) != leading:
                return None  # the turn before this one left calls without results at its head
            role_now = role
        path = _PATHS[index] if index < _HELD else f"messages[{index}]"
        parts: list[Part] = []
        if type(content) is str:
            if content:
                if called:
                    return None
                opening = False
                messages.append(text_message(role, content))
                paths.append(path)
                continue
            if not (index == last and not user):
                return None  # an empty message, allowed only as the final assistant one
        elif type(content) is list:
            if not content and not (index == last and not user):
                return None
            kinds = []
            for block in content:
                if type(block) is not dict:
                    return None
                tag = block.get("type")
                if tag == "text":
                    text = block.get("text")
                    if type(text) is not str or not text or called:
                        return None
                    parts.append(text_part(text))
                    opening = False
                elif tag == "tool_use":
                    call_id, name, arguments = block.get("id"), block.get("name"), block.get("input")
                    if user or type(call_id) is not str or call_id in call_ids:
                        return None
                    if not (call_id.isascii() and call_id.isidentifier() or _ID.fullmatch(call_id)):  # `plain_name`
                        return None
                    if type(name) is not str or type(arguments) is not dict:
                        return None
                    parts.append(wire_call(call_id, name, arguments))
                    call_ids.add(call_id)
                    calls.append(call_id)
                    called = tool_blocks = True
                elif tag == "tool_result":
                    call_id, is_error = block.get("tool_use_id"), block.get("is_error")
                    result = _result_text(block.get("content"))
                    if not user or type(call_id) is not str or call_id not in asked or call_id in answered:
                        return None
                    if result is None or (is_error is not None and type(is_error) is not bool):
                        return None
                    answered.add(call_id)
                    leading += opening
                    messages.append(result_message(call_id, result, bool(is_error)))
                    paths.append(path)
                    tool_blocks = True
                elif tag == "thinking" or tag == "redacted_thinking":
                    fields = _REDACTED if tag == "redacted_thinking" else _THOUGHT
                    if user or called or any(type(block.get(key)) is not str for key in fields):
                        return None
                    parts.append(decode_block(block))
                else:
                    return None
                kinds.append(tag)
            if not user:
                final = kinds
            elif not parts and kinds:
                continue  # a user message of results only: no user message of its own
        else:
            return None
        messages.append(walked_message(role, tuple(parts)))
        paths.append(path)
    if calls and role_now == "assistant" or role_now == "user" and len(asked) != leading:
        return None
    if final is not None and not _final_turn_ok(final, data):
        return None
    return messages, paths, tool_blocks


def _result_text(content: Any) -> str | None:
    """A `tool_result`'s content as `_validate._tool_result` reads it: a string, or text blocks joined."""
    if content is None:
        return ""
    if type(content) is str:
        return content
    if type(content) is not list:
        return None
    texts = []
    for part in content:
        if type(part) is not dict or part.get("type") != "text" or type(part.get("text")) is not str:
            return None
        texts.append(part["text"])
    return "\n".join(texts)


def _final_turn_ok(kinds: list[str], data: dict[str, Any]) -> bool:
    """`_reasoning.check_final_turn` passes: thinking only when enabled, and then first before a call."""
    if data.get("thinking") is None or not _enabled(data):  # the first test is `_enabled`'s own, inline
        return "thinking" not in kinds and "redacted_thinking" not in kinds
    return "tool_use" not in kinds or kinds[0] in _THINKING
