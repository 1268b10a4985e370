"""The Anthropic Messages schema, checked the way the API does it: like a pydantic model, answering
`<loc>: <msg>` with pydantic's own wording (reference A.6, step 0). Touches only a decoded JSON body;
raises nothing but `Rejection`. Evidence tags as in `_body`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from ...messages._types import Tool
from ._body import Block, Body, WireMessage, fail

__all__ = ["validate_schema"]


_OBJECT = "Input should be a valid dictionary or object to extract fields from"  # a tagged union's input
_INT_TEXT = re.compile(r"\s*[+-]?\d+\s*")
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


def _required(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        fail(f"{where}.{key}" if where else key, "Field required")
    return obj[key]


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        fail(where, "Input should be a valid string")
    return value


def _int(value: Any, where: str) -> int:
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            fail(where, "Input should be a finite number")
        if not value.is_integer():
            fail(where, "Input should be a valid integer, got a number with a fractional part")
        return int(value)
    if isinstance(value, str):
        if not _INT_TEXT.fullmatch(value) or len(value) > 4000:  # past Python's int conversion limit
            fail(where, "Input should be a valid integer, unable to parse string as an integer")
        return int(value)
    fail(where, "Input should be a valid integer")


def _float(value: Any, where: str) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            fail(where, "Input should be a valid number, unable to parse string as a number")
    fail(where, "Input should be a valid number")


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, str)):
        word = str(value).strip().lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        fail(where, "Input should be a valid boolean, unable to interpret input")
    fail(where, "Input should be a valid boolean")


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        # [CAP-like: ISSUE, many] "messages.5.content: Input should be a valid list"; for a `str | list`
        # field the API reports only the list branch.
        fail(where, "Input should be a valid list")
    return value


def _dict(value: Any, where: str, message: str = "Input should be a valid dictionary") -> dict[str, Any]:
    if not isinstance(value, dict):
        fail(where, message)
    return value


def _tag(value: dict[str, Any], where: str, tags: frozenset[str], expected: str) -> str:
    """Pydantic's discriminated-union check on `type`."""
    tag = value.get("type")
    if tag is None:
        fail(where, "Unable to extract tag using discriminator 'type'")
    if not isinstance(tag, str) or tag not in tags:
        fail(where, f"Input tag '{tag}' found using 'type' does not match any of the expected tags: {expected}")
    return tag


def _quoted(tags: tuple[str, ...]) -> str:
    return ", ".join(f"'{tag}'" for tag in tags)


# -- the body ---------------------------------------------------------------------------------------

_KNOWN_KEYS = frozenset(
    # MessageCreateParams of anthropic 2.14, plus its beta params and the sampling params older
    # SDKs send (temperature, top_p, top_k).
    "cache_control container diagnostics inference_geo max_tokens messages metadata model output_config "
    "service_tier speed stop_sequences stream system thinking tool_choice tools user_profile_id "
    "workspace_id temperature top_p top_k betas billing_policy compaction context_management "
    "fallback_credit_token fallbacks mcp_servers thread".split()
)
_BLOCK_TAGS = tuple(
    "text image document search_result thinking redacted_thinking tool_use tool_result server_tool_use "
    "web_search_tool_result web_fetch_tool_result code_execution_tool_result bash_code_execution_tool_result "
    "text_editor_code_execution_tool_result tool_search_tool_result container_upload".split()
)  # [INF] the API lists its tags in this error; this is the SDK's ContentBlockParam union.
_RESULT_TAGS = ("text", "image", "search_result", "document", "tool_reference", "browser_state")
# [ISSUE] the live list quoted in 2026-01 for `tools.0: Input tag 'function' found using 'type' ...`
_TOOL_TAGS_QUOTED = _quoted(
    tuple(
        "bash_20250124 custom text_editor_20250124 text_editor_20250429 text_editor_20250728 "
        "web_search_20250305".split()
    )
)
_SERVER_TOOLS = frozenset(
    "bash_20250124 code_execution_20250522 code_execution_20250825 code_execution_20260120 "
    "code_execution_20260521 browser_toolset_20260801 memory_20250818 computer_toolset_20260801 "
    "text_editor_20250124 text_editor_20250429 text_editor_20250728 web_search_20250305 "
    "web_fetch_20250910 web_search_20260209 web_fetch_20260209 web_fetch_20260309 web_search_20260318 "
    "web_fetch_20260318 tool_search_tool_bm25_20251119 tool_search_tool_bm25 "
    "tool_search_tool_regex_20251119 tool_search_tool_regex".split()
)  # every server tool type the SDK can send: accepted, not turned into neutral tools
_CHOICE_TAGS = ("auto", "any", "tool", "none")
_CHOICES = {"auto": "auto", "any": "required", "none": "none"}
# Each union's tags as a set and as its error quotes them, made once: a request has many blocks.
_BLOCK_TAG_SET, _BLOCK_TAGS_QUOTED = frozenset(_BLOCK_TAGS), _quoted(_BLOCK_TAGS)
_RESULT_TAG_SET, _RESULT_TAGS_QUOTED = frozenset(_RESULT_TAGS), _quoted(_RESULT_TAGS)
_CHOICE_TAG_SET, _CHOICE_TAGS_QUOTED = frozenset(_CHOICE_TAGS), _quoted(_CHOICE_TAGS)
_ID = re.compile(r"[a-zA-Z0-9_-]+")
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")


def validate_schema(data: Any) -> Body:
    """Step 1 of the API's order: types, required fields and patterns, field by field."""
    body = _dict(data, "")  # [INF] the wording for a body that is JSON but not an object
    model = _str(_required(body, "model", ""), "model")
    messages = _messages(_required(body, "messages", ""))
    max_tokens = _int(_required(body, "max_tokens", ""), "max_tokens")
    if max_tokens < 0:
        fail("max_tokens", "Input should be greater than or equal to 0")  # [INF] 0 primes the cache
    system = _system(body["system"]) if body.get("system") is not None else []
    tools, tool_count = _tools(body["tools"]) if body.get("tools") is not None else ([], 0)
    choice = _tool_choice(body["tool_choice"]) if body.get("tool_choice") is not None else None
    stream = _bool(body["stream"], "stream") if body.get("stream") is not None else False
    if body.get("stop_sequences") is not None:
        for index, item in enumerate(_list(body["stop_sequences"], "stop_sequences")):
            _str(item, f"stop_sequences.{index}")
    for key in ("temperature", "top_p"):
        if body.get(key) is not None:
            _float(body[key], key)
    if body.get("top_k") is not None:
        _int(body["top_k"], "top_k")
    if body.get("metadata") is not None:
        _dict(body["metadata"], "metadata")
    for key in body:
        if key not in _KNOWN_KEYS:
            # [ISSUE] "response_format: Extra inputs are not permitted", "extra_body: ..." and others.
            fail(key, "Extra inputs are not permitted")
    return Body(model, messages, system, tools, tool_count, choice, stream)


def _messages(value: Any) -> list[WireMessage]:
    items = _list(value, "messages")
    if not items:
        fail("messages", "at least one message is required")  # [3P]
    return [_message(item, f"messages.{index}") for index, item in enumerate(items)]


def _message(value: Any, where: str) -> WireMessage:
    # Unknown keys in a message are ignored, though the API rejects them ("messages.0.name: Extra
    # inputs are not permitted" [ISSUE microsoft/autogen#3034]): replayed SDK objects carry extras.
    message = _dict(value, where)
    role = _required(message, "role", where)
    if role not in ("user", "assistant", "system"):
        fail(f"{where}.role", "Input should be 'user', 'assistant' or 'system'")  # [INF] pydantic Literal
    content = _required(message, "content", where)
    if isinstance(content, str):
        return WireMessage(role, [Block("text", text=content)] if content else [])
    items = _list(content, f"{where}.content")
    if role == "system":
        return WireMessage(role, [_system_block(item, f"{where}.content.{index}") for index, item in enumerate(items)])
    blocks = []
    for index, item in enumerate(items):
        plain = _plain_block(item)
        blocks.append(plain if plain is not None else _block(item, f"{where}.content.{index}"))
    return WireMessage(role, blocks)


def _plain_block(value: Any) -> Block | None:
    """A `text`, `tool_use` or `tool_result` block of the shape nearly every request sends, read without
    the field-by-field checks (and the error paths they build) that it passes anyway; None for
    anything else, which `_block` checks in full."""
    if type(value) is not dict:
        return None
    tag = value.get("type")
    if tag == "text":
        text = value.get("text")
        return Block("text", text=text) if type(text) is str else None
    if tag == "tool_use":
        call_id, name, arguments = value.get("id"), value.get("name"), value.get("input")
        if type(call_id) is str and _ID.fullmatch(call_id) and type(name) is str and type(arguments) is dict:
            return Block("tool_use", id=call_id, name=name, input=arguments)
        return None
    if tag == "tool_result":
        call_id, content, is_error = value.get("tool_use_id"), value.get("content"), value.get("is_error")
        plain = (content is None or type(content) is str) and (is_error is None or type(is_error) is bool)
        if type(call_id) is str and plain:
            return Block("tool_result", tool_use_id=call_id, content=content or "", is_error=bool(is_error))
    return None


def _text_block(block: dict[str, Any], where: str) -> Block:
    return Block("text", text=_str(_required(block, "text", where), f"{where}.text"))


def _block(value: Any, where: str) -> Block:
    block = _dict(value, where, _OBJECT)
    tag = _tag(block, where, _BLOCK_TAG_SET, _BLOCK_TAGS_QUOTED)
    inner = f"{where}.{tag}"  # pydantic puts a tagged union's tag in the path: `content.0.tool_use.id`
    if tag == "text":
        return _text_block(block, inner)
    if tag == "tool_use":
        call_id = _str(_required(block, "id", inner), f"{inner}.id")
        if not _ID.fullmatch(call_id):
            fail(f"{inner}.id", "String should match pattern '^[a-zA-Z0-9_-]+$'")  # [3P, several]
        name = _str(_required(block, "name", inner), f"{inner}.name")
        arguments = _dict(_required(block, "input", inner), f"{inner}.input")
        return Block("tool_use", id=call_id, name=name, input=arguments)
    if tag == "tool_result":
        return _tool_result(block, inner)
    if tag in ("thinking", "redacted_thinking"):
        return _thinking(block, tag, inner)
    return Block(tag)


def _thinking(block: dict[str, Any], tag: str, where: str) -> Block:
    """[INF] pydantic's wording for the fields the SDK's ThinkingBlockParam requires."""
    for key in ("data",) if tag == "redacted_thinking" else ("thinking", "signature"):
        _str(_required(block, key, where), f"{where}.{key}")
    return Block(tag, reasoning=dict(block))


def _tool_result(block: dict[str, Any], where: str) -> Block:
    call_id = _str(_required(block, "tool_use_id", where), f"{where}.tool_use_id")
    content = block.get("content")
    if content is None:
        text = ""
    elif isinstance(content, str):
        text = content
    else:
        texts = []
        for index, item in enumerate(_list(content, f"{where}.content")):
            inner = f"{where}.content.{index}"
            part = _dict(item, inner, _OBJECT)
            if _tag(part, inner, _RESULT_TAG_SET, _RESULT_TAGS_QUOTED) == "text":
                texts.append(_text_block(part, f"{inner}.text").text)
        text = "\n".join(texts)
    is_error = _bool(block["is_error"], f"{where}.is_error") if block.get("is_error") is not None else False
    return Block("tool_result", tool_use_id=call_id, content=text, is_error=is_error)


def _system_block(value: Any, where: str) -> Block:
    """A system prompt block is a plain text block model, so its errors name `type`, not a tag."""
    block = _dict(value, where)
    if _required(block, "type", where) != "text":
        fail(f"{where}.type", "Input should be 'text'")
    return _text_block(block, where)


def _system(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value else []
    return [_system_block(item, f"system.{index}").text for index, item in enumerate(_list(value, "system"))]


def _tools(value: Any) -> tuple[list[Tool], int]:
    items = _list(value, "tools")
    tools: list[Tool] = []
    names: list[str] = []
    for index, item in enumerate(items):
        where = f"tools.{index}"
        tool = _dict(item, where, _OBJECT)
        kind = tool.get("type")
        if kind is None or kind == "custom":
            tools.append(_custom_tool(tool, f"{where}.custom"))
            names.append(tools[-1].name)
        elif isinstance(kind, str) and kind in _SERVER_TOOLS:
            if isinstance(tool.get("name"), str):
                names.append(tool["name"])
        else:
            fail(
                where,
                f"Input tag '{kind}' found using 'type' does not match any of the expected tags: {_TOOL_TAGS_QUOTED}",
            )
    if len(set(names)) != len(names):
        fail("tools", "Tool names must be unique.")  # [3P]
    return tools, len(items)


def _custom_tool(tool: dict[str, Any], where: str) -> Tool:
    name = _str(_required(tool, "name", where), f"{where}.name")
    if not _TOOL_NAME.fullmatch(name):
        fail(f"{where}.name", "String should match pattern '^[a-zA-Z0-9_-]{1,128}$'")  # [3P, 2026 probes]
    description = _str(tool["description"], f"{where}.description") if tool.get("description") is not None else ""
    schema = _dict(_required(tool, "input_schema", where), f"{where}.input_schema")
    if _required(schema, "type", f"{where}.input_schema") != "object":
        fail(f"{where}.input_schema.type", "Input should be 'object'")  # [INF] pydantic Literal
    return Tool(name=name, description=description, parameters=schema)


def _tool_choice(value: Any) -> str:
    choice = _dict(value, "tool_choice", _OBJECT)  # e.g. OpenAI's "tool_choice": "auto"
    tag = _tag(choice, "tool_choice", _CHOICE_TAG_SET, _CHOICE_TAGS_QUOTED)
    if choice.get("disable_parallel_tool_use") is not None:
        _bool(choice["disable_parallel_tool_use"], f"tool_choice.{tag}.disable_parallel_tool_use")
    if tag == "tool":
        return _str(_required(choice, "name", "tool_choice.tool"), "tool_choice.tool.name")
    return _CHOICES[tag]


# -- the rules after the schema ---------------------------------------------------------------------
