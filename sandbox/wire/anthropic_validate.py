"""How the Anthropic Messages API checks a request body, with its verbatim messages.

The API validates the body like a pydantic model and answers `<loc>: <msg>`
(`messages.0.content: Input should be a valid list`), then applies its tool-pairing rules. This
module does the same, in the order of the reference's "Suggested validation order" (A.6): schema
and field checks, tools defined, consecutive same-role turns merged, then the walk over the turns.
The first violation wins.

Evidence for each message is noted beside it: [CAP] captured from the live API, [ISSUE] quoted in a
public issue, [3P] quoted by third-party code, [INF] inferred (pydantic's own wording in Python mode,
which every captured `<loc>: <msg>` text matches, or our best guess).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from .._types import Tool
from ._base import Rule

__all__ = ["Block", "Body", "Invalid", "WireMessage", "check_rules", "load_json", "validate_schema"]


class Invalid(Exception):
    """One violation: the API's message, and where it points in the request's `messages`."""

    def __init__(
        self,
        message: str,
        rule: Rule = Rule.MALFORMED,
        *,
        message_index: int | None = None,
        block_index: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.rule = rule
        self.message_index = message_index
        self.block_index = block_index


@dataclass(frozen=True)
class Block:
    """A content block after validation, with lax-coerced values (`"is_error": "true"` -> True)."""

    kind: str
    text: str = ""
    id: str = ""
    name: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    tool_use_id: str = ""
    content: str = ""
    is_error: bool = False
    reasoning: dict[str, Any] | None = None
    """A `thinking` or `redacted_thinking` block as sent: its echo is checked whole (`anthropic_reasoning`)."""


@dataclass(frozen=True)
class WireMessage:
    """One entry of `messages`, as sent (not yet merged with its same-role neighbours)."""

    role: str
    blocks: list[Block]
    """String content becomes one text block; an empty string, no blocks."""


@dataclass(frozen=True)
class Body:
    """A request body that passed the schema: what the rules and the neutral model need."""

    model: str
    messages: list[WireMessage]
    system: list[str]
    tools: list[Tool]
    """The custom tools; server tools (`web_search_20250305`, ...) only count in `tool_count`."""
    tool_count: int
    tool_choice: str | None
    stream: bool


def _fail(where: str, message: str) -> NoReturn:
    raise Invalid(f"{where}: {message}" if where else message)


# -- JSON -------------------------------------------------------------------------------------------

_NOT_JSON = "The request body is not valid JSON"
# [ISSUE] promptfoo#4489, anthropics/claude-code#8272, #9586: "The request body is not valid JSON:
# unexpected character: line 8 column 316 (char 466)", "... no low surrogate in string: line 1 column
# 37589 (char 37588)", "... invalid high surrogate in string: ...". The reasons are the JSON parser's
# (orjson/yyjson); we map Python's reasons onto them. Every reason but those three is [INF].


class _Constant(ValueError):
    """Python's json accepts NaN and Infinity; the API's parser does not."""


def _reject_constant(name: str) -> Any:
    raise _Constant(name)


def _not_json(reason: str, text: str, pos: int) -> NoReturn:
    line = text.count("\n", 0, pos) + 1
    column = pos - text.rfind("\n", 0, pos)
    raise Invalid(f"{_NOT_JSON}: {reason}: line {line} column {column} (char {pos})")


def _reason(error: json.JSONDecodeError) -> str:
    if error.msg.startswith("Extra data"):
        return "unexpected content after document"
    if error.pos >= len(error.doc) or error.msg.startswith("Unterminated string"):
        return "unexpected end of data"
    if error.msg.startswith("Invalid control character"):
        return "unexpected control character in string"
    if error.msg.startswith("Invalid \\"):
        return "invalid escaped character in string"
    return "unexpected character"


_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)


def _check_surrogates(text: str) -> None:
    """Python decodes a lone `\\ud83d` escape into a lone surrogate; the API rejects it."""
    pending: re.Match[str] | None = None
    for match in _ESCAPE.finditer(text):
        code = int(match[1], 16) if match[1] else None
        low = code is not None and 0xDC00 <= code <= 0xDFFF
        if pending is not None:
            if not (low and match.start() == pending.end()):
                _not_json("no low surrogate in string", text, pending.end())
            pending = None
            continue
        if code is not None and 0xD800 <= code <= 0xDBFF:
            pending = match
        elif low:
            _not_json("invalid high surrogate in string", text, match.start())
    if pending is not None:
        _not_json("no low surrogate in string", text, pending.end())


def load_json(body: bytes) -> Any:
    """The decoded body, or `Invalid` with the API's "not valid JSON" message."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        good = body[: error.start].decode("utf-8", errors="replace")
        _not_json("invalid UTF-8 encoding in string", good, len(good))  # [INF]
    if not text:
        # [INF] orjson's own wording for an empty document.
        raise Invalid(f"{_NOT_JSON}: Input is a zero-length, empty document: line 1 column 1 (char 0)")
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except _Constant as error:
        _not_json("unexpected character", text, max(text.find(str(error)), 0))
    except json.JSONDecodeError as error:
        _not_json(_reason(error), text, error.pos)
    except ValueError:  # an integer longer than Python's 4300-digit conversion limit
        raise Invalid(f"{_NOT_JSON}: number out of range") from None  # [INF]
    except RecursionError:
        raise Invalid(f"{_NOT_JSON}: recursion limit exceeded") from None  # [INF]
    if "\\u" in text:
        _check_surrogates(text)
    return data


# -- pydantic-style field checks (lax mode, as pydantic validates decoded JSON in Python mode) -------

_OBJECT = "Input should be a valid dictionary or object to extract fields from"  # a tagged union's input
_INT_TEXT = re.compile(r"\s*[+-]?\d+\s*")
_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


def _required(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        _fail(f"{where}.{key}" if where else key, "Field required")
    return obj[key]


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        _fail(where, "Input should be a valid string")
    return value


def _int(value: Any, where: str) -> int:
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            _fail(where, "Input should be a finite number")
        if not value.is_integer():
            _fail(where, "Input should be a valid integer, got a number with a fractional part")
        return int(value)
    if isinstance(value, str):
        if not _INT_TEXT.fullmatch(value) or len(value) > 4000:  # past Python's int conversion limit
            _fail(where, "Input should be a valid integer, unable to parse string as an integer")
        return int(value)
    _fail(where, "Input should be a valid integer")


def _float(value: Any, where: str) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            _fail(where, "Input should be a valid number, unable to parse string as a number")
    _fail(where, "Input should be a valid number")


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, str)):
        word = str(value).strip().lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        _fail(where, "Input should be a valid boolean, unable to interpret input")
    _fail(where, "Input should be a valid boolean")


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        # [CAP-like: ISSUE, many] "messages.5.content: Input should be a valid list"; for a `str | list`
        # field the API reports only the list branch.
        _fail(where, "Input should be a valid list")
    return value


def _dict(value: Any, where: str, message: str = "Input should be a valid dictionary") -> dict[str, Any]:
    if not isinstance(value, dict):
        _fail(where, message)
    return value


def _tag(value: dict[str, Any], where: str, tags: frozenset[str], expected: str) -> str:
    """Pydantic's discriminated-union check on `type`."""
    tag = value.get("type")
    if tag is None:
        _fail(where, "Unable to extract tag using discriminator 'type'")
    if not isinstance(tag, str) or tag not in tags:
        _fail(where, f"Input tag '{tag}' found using 'type' does not match any of the expected tags: {expected}")
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
_ID = re.compile(r"[a-zA-Z0-9_-]+")
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")


def validate_schema(data: Any) -> Body:
    """Step 1 of the API's order: types, required fields and patterns, field by field."""
    body = _dict(data, "")  # [INF] the wording for a body that is JSON but not an object
    model = _str(_required(body, "model", ""), "model")
    messages = _messages(_required(body, "messages", ""))
    max_tokens = _int(_required(body, "max_tokens", ""), "max_tokens")
    if max_tokens < 0:
        _fail("max_tokens", "Input should be greater than or equal to 0")  # [INF] 0 primes the cache
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
            _fail(key, "Extra inputs are not permitted")
    return Body(model, messages, system, tools, tool_count, choice, stream)


def _messages(value: Any) -> list[WireMessage]:
    items = _list(value, "messages")
    if not items:
        _fail("messages", "at least one message is required")  # [3P]
    return [_message(item, f"messages.{index}") for index, item in enumerate(items)]


def _message(value: Any, where: str) -> WireMessage:
    # Unknown keys in a message are ignored, though the API rejects them ("messages.0.name: Extra
    # inputs are not permitted" [ISSUE microsoft/autogen#3034]): replayed SDK objects carry extras.
    message = _dict(value, where)
    role = _required(message, "role", where)
    if role not in ("user", "assistant", "system"):
        _fail(f"{where}.role", "Input should be 'user', 'assistant' or 'system'")  # [INF] pydantic Literal
    content = _required(message, "content", where)
    if isinstance(content, str):
        return WireMessage(role, [Block("text", text=content)] if content else [])
    items = _list(content, f"{where}.content")
    check = _system_block if role == "system" else _block
    return WireMessage(role, [check(item, f"{where}.content.{index}") for index, item in enumerate(items)])


def _text_block(block: dict[str, Any], where: str) -> Block:
    return Block("text", text=_str(_required(block, "text", where), f"{where}.text"))


def _block(value: Any, where: str) -> Block:
    block = _dict(value, where, _OBJECT)
    tag = _tag(block, where, frozenset(_BLOCK_TAGS), _quoted(_BLOCK_TAGS))
    inner = f"{where}.{tag}"  # pydantic puts a tagged union's tag in the path: `content.0.tool_use.id`
    if tag == "text":
        return _text_block(block, inner)
    if tag == "tool_use":
        call_id = _str(_required(block, "id", inner), f"{inner}.id")
        if not _ID.fullmatch(call_id):
            _fail(f"{inner}.id", "String should match pattern '^[a-zA-Z0-9_-]+$'")  # [3P, several]
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
            if _tag(part, inner, frozenset(_RESULT_TAGS), _quoted(_RESULT_TAGS)) == "text":
                texts.append(_text_block(part, f"{inner}.text").text)
        text = "\n".join(texts)
    is_error = _bool(block["is_error"], f"{where}.is_error") if block.get("is_error") is not None else False
    return Block("tool_result", tool_use_id=call_id, content=text, is_error=is_error)


def _system_block(value: Any, where: str) -> Block:
    """A system prompt block is a plain text block model, so its errors name `type`, not a tag."""
    block = _dict(value, where)
    if _required(block, "type", where) != "text":
        _fail(f"{where}.type", "Input should be 'text'")
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
            _fail(
                where,
                f"Input tag '{kind}' found using 'type' does not match any of the expected tags: {_TOOL_TAGS_QUOTED}",
            )
    if len(set(names)) != len(names):
        _fail("tools", "Tool names must be unique.")  # [3P]
    return tools, len(items)


def _custom_tool(tool: dict[str, Any], where: str) -> Tool:
    name = _str(_required(tool, "name", where), f"{where}.name")
    if not _TOOL_NAME.fullmatch(name):
        _fail(f"{where}.name", "String should match pattern '^[a-zA-Z0-9_-]{1,128}$'")  # [3P, 2026 probes]
    description = _str(tool["description"], f"{where}.description") if tool.get("description") is not None else ""
    schema = _dict(_required(tool, "input_schema", where), f"{where}.input_schema")
    if _required(schema, "type", f"{where}.input_schema") != "object":
        _fail(f"{where}.input_schema.type", "Input should be 'object'")  # [INF] pydantic Literal
    return Tool(name, description, schema)


def _tool_choice(value: Any) -> str:
    choice = _dict(value, "tool_choice", _OBJECT)  # e.g. OpenAI's "tool_choice": "auto"
    tag = _tag(choice, "tool_choice", frozenset(_CHOICE_TAGS), _quoted(_CHOICE_TAGS))
    if choice.get("disable_parallel_tool_use") is not None:
        _bool(choice["disable_parallel_tool_use"], f"tool_choice.{tag}.disable_parallel_tool_use")
    if tag == "tool":
        return _str(_required(choice, "name", "tool_choice.tool"), "tool_choice.tool.name")
    return _CHOICES[tag]


# -- the rules after the schema ---------------------------------------------------------------------


def check_rules(body: Body) -> None:
    """Steps 1 (content checks), 2, 3 and 4 of the reference's order, on a body that passed the schema."""
    _check_content(body.messages)
    has_tool_blocks = any(
        block.kind in ("tool_use", "tool_result") for message in body.messages for block in message.blocks
    )
    if has_tool_blocks and not body.tool_count:
        # [3P] a test constant; portkey's error library quotes it without backticks.
        raise Invalid("Requests which include `tool_use` or `tool_result` blocks must define tools.")
    turns = _merge(body.messages)
    call_ids: set[str] = set()
    for index, turn in enumerate(turns):
        if turn.role == "user":
            _check_results(turn, turns[index - 1] if index else None)
        elif turn.role == "assistant":
            _check_calls(turn, turns[index + 1] if index + 1 < len(turns) else None)
            _check_unique(turn, call_ids)


def _check_content(messages: list[WireMessage]) -> None:
    last = len(messages) - 1
    for index, message in enumerate(messages):
        if not message.blocks and not (index == last and message.role == "assistant"):
            # [ISSUE] chatlabs PR #35 (unindexed, 2024); claude-code#6458 shows `messages.25: all
            # messages ...` (2025); the tail after "all messages" is [INF] from the 2024 text.
            raise Invalid(
                f"messages.{index}: all messages must have non-empty content except for the optional "
                "final assistant message",
                message_index=index,
            )
        for position, block in enumerate(message.blocks):
            problem = _block_problem(block, message.role, f"messages.{index}")
            if problem:
                raise Invalid(problem, message_index=index, block_index=position)


def _block_problem(block: Block, role: str, where: str) -> str:
    if block.kind == "text" and not block.text:
        return "messages: text content blocks must be non-empty"  # [ISSUE] chatbot-ui#1656
    if block.kind == "tool_result" and role != "user":
        return f"{where}: `tool_result` blocks can only be in `user` messages"  # [3P]
    if block.kind == "tool_use" and role != "assistant":
        return f"{where}: `tool_use` blocks can only be in `assistant` messages"  # [INF] the mirror rule
    return ""


@dataclass(frozen=True)
class _Turn:
    """Consecutive same-role messages, merged as the API merges them; blocks keep their wire place."""

    role: str
    blocks: list[tuple[int, int, Block]]
    """(message index, block index in that message, block)."""


def _merge(messages: list[WireMessage]) -> list[_Turn]:
    # System messages sit outside the user/assistant alternation: we leave them out of the walk [INF].
    turns: list[_Turn] = []
    for index, message in enumerate(messages):
        if message.role == "system":
            continue
        placed = [(index, position, block) for position, block in enumerate(message.blocks)]
        if turns and turns[-1].role == message.role:
            turns[-1].blocks.extend(placed)
        else:
            turns.append(_Turn(message.role, placed))
    return turns


def _check_calls(turn: _Turn, after: _Turn | None) -> None:
    """E1 [CAP C1]: every `tool_use` ends its turn and is answered by the `tool_result`s opening the next."""
    calls = [(index, block.id) for index, _, block in turn.blocks if block.kind == "tool_use"]
    if not calls:
        return
    trailing: set[str] = set()
    for _, _, block in reversed(turn.blocks):
        if block.kind != "tool_use":
            break  # trigger (b): anything after a tool_use breaks "immediately after"
        trailing.add(block.id)
    answered: set[str] = set()
    results_later = False
    if after is not None and after.role == "user":
        for _, _, block in after.blocks:
            if block.kind != "tool_result":
                break  # trigger (c): results must come first in the next turn
            answered.add(block.tool_use_id)
        results_later = not answered and any(block.kind == "tool_result" for _, _, block in after.blocks)
    missing = [(index, call_id) for index, call_id in calls if call_id not in trailing or call_id not in answered]
    if not missing:
        return
    # [INF, as the reference recommends] N is the assistant message, or the one after it when the
    # assistant is messages[0] (C1 says `messages.1` there; C4 names the assistant).
    number = missing[0][0] or 1
    ids = ", ".join(call_id for _, call_id in missing)
    raise Invalid(
        f"messages.{number}: `tool_use` ids were found without `tool_result` blocks immediately after: "
        f"{ids}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        Rule.MISSING_RESULT,
        message_index=after.blocks[0][0] if after is not None and results_later else missing[0][0],
    )


def _check_unique(turn: _Turn, call_ids: set[str]) -> None:
    """A call id may appear once in the whole history (a turn appended twice repeats them all).

    [ISSUE] "messages.3.content.1: `tool_use` ids must be unique" (req_011Cb4iH...). Where the API
    makes this check is [INF]: we make it after E1 on the same turn, so a turn appended once per
    call still reports the missing results first.
    """
    for index, position, block in turn.blocks:
        if block.kind != "tool_use":
            continue
        if block.id in call_ids:
            raise Invalid(
                f"messages.{index}.content.{position}: `tool_use` ids must be unique",
                Rule.DUPLICATE_TURN,
                message_index=index,
                block_index=position,
            )
        call_ids.add(block.id)


def _check_results(turn: _Turn, before: _Turn | None) -> None:
    """E2 [CAP C4] and duplicates: each `tool_result` answers a call of the turn just before, once."""
    calls = set()
    if before is not None and before.role == "assistant":
        calls = {block.id for _, _, block in before.blocks if block.kind == "tool_use"}
    seen: set[str] = set()
    for index, position, block in turn.blocks:
        if block.kind != "tool_result":
            continue
        call_id = block.tool_use_id
        if call_id not in calls:
            raise Invalid(
                f"messages.{index}.content.{position}: unexpected `tool_use_id` found in `tool_result` "
                f"blocks: {call_id}. Each `tool_result` block must have a corresponding `tool_use` block "
                "in the previous message.",
                Rule.UNKNOWN_CALL_ID if calls else Rule.RESULT_WITHOUT_TURN,
                message_index=index,
                block_index=position,
            )
        if call_id in seen:
            raise Invalid(
                f"messages.{index}.content.{position}: each tool_use must have a single result. "
                f"Found multiple `tool_result` blocks with id: {call_id}",  # [ISSUE, several]
                Rule.DUPLICATE_RESULT,
                message_index=index,
                block_index=position,
            )
        seen.add(call_id)
