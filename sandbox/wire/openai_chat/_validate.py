"""The fake side's request checks for OpenAI Chat Completions, in the real API's order.

Schema checks (dotless paths such as `messages[2].tool_calls[0].id`, a `code`); the rules that pair tool
calls with tool messages run after them, in `_pairing`. Touches only the request body. Every message
text observed from the API (marked so, or quoted with its source) is copied verbatim, misspellings
included; the rest follow the API's own templates and say so in a comment. Nothing here may raise
anything but `Rejection`, whatever the body holds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, NoReturn

from .._base import Rule
from .._json import decode

__all__ = ["NOT_JSON", "Rejection", "check_request", "load_body"]

NOT_JSON = (
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your "
    "HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. "
    "If you have trouble figuring out how to fix this, please contact us through our help center at "
    "help.openai.com.)"
)

# Every top-level field of openai 3.57's CompletionCreateParams: anything else is rejected (C14).
KNOWN_FIELDS = frozenset(
    "audio frequency_penalty function_call functions logit_bias logprobs max_completion_tokens max_tokens "
    "messages metadata modalities model moderation n parallel_tool_calls prediction presence_penalty "
    "prompt_cache_key prompt_cache_options prompt_cache_retention reasoning_effort response_format "
    "safety_identifier seed service_tier stop store stream stream_options temperature tool_choice tools "
    "top_logprobs top_p user verbosity web_search_options".split()
)
ROLES = ("system", "assistant", "user", "function", "tool", "developer")
PART_TYPES = ("text", "image_url", "input_audio", "refusal", "audio", "file")
TOOL_CHOICES = ("none", "auto", "required")
NAME_PATTERN = "^[a-zA-Z0-9_-]+$"
_NAME_RE = re.compile(NAME_PATTERN)
MAX_CALL_ID = 40
MAX_NAME = 64
MAX_DESCRIPTION = 1024


_MESSAGE_PARAM = re.compile(r"^messages\.?\[(\d+)\]")


class Rejection(Exception):
    """One violation: the message text, `param` and `code` of OpenAI's error body, and its `Rule`."""

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        rule: Rule = Rule.MALFORMED,
        index: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        self.rule = rule
        found = _MESSAGE_PARAM.match(param or "")
        self.index = index if index is not None or found is None else int(found[1])
        """The message the transcript marks: the one the param names, unless a rule says otherwise."""


def load_body(body: bytes) -> dict[str, Any]:
    """The body as a JSON object, or OpenAI's "could not parse" rejection."""
    try:
        data = decode(body, _DECODER)
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise Rejection(NOT_JSON) from None
    if not isinstance(data, dict):
        # [INF] no public report of a valid-JSON non-object body; the API reads it as no payload at all.
        raise Rejection(NOT_JSON)
    return data


def check_request(data: Mapping[str, Any]) -> None:
    """Raise `Rejection` for the first schema problem the real API would reject (reference section 4.3);
    `_pairing` checks the order of calls and results after it."""
    _check_top_level(data)
    messages = data["messages"]
    for index, message in enumerate(messages):
        if not _plain_message(message):
            _check_message(message, index)
    tools = data.get("tools")
    if tools is not None:
        _check_tools(tools)
    _check_tool_choice(data.get("tool_choice"))
    if data.get("tool_choice") is not None and tools is None:
        _reject(  # C12
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
            "tool_choice",
        )
    if data.get("parallel_tool_calls") is not None and tools is None:
        _reject(  # C13
            "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' "
            "are specified.",
            "parallel_tool_calls",
        )


def _check_top_level(data: Mapping[str, Any]) -> None:
    unknown = [key for key in data if key not in KNOWN_FIELDS]
    if len(unknown) == 1:
        _reject(f"Unrecognized request argument supplied: {unknown[0]}", None, None)  # C14
    if unknown:
        _reject(f"Unrecognized request arguments supplied: {', '.join(unknown)}", None, None)  # [INF] plural
    if data.get("model") in (None, ""):
        # Verbatim, lower-case, param and code null (lss233/kirara-ai#800, danielmiessler/Fabric#239);
        # that an empty string gets it too is [INF].
        _reject("you must provide a model parameter", None, None)
    _expect(data["model"], "model", str)
    if "messages" not in data:
        _missing("messages")  # VERIFIED: SilasMarvin/lsp-ai#108
    _expect(data["messages"], "messages", list)
    if not data["messages"]:
        _empty_array("messages")
    for key, kinds in _TOP_LEVEL_TYPES:
        if data.get(key) is not None:
            _expect(data[key], key, *kinds, expected="one of a string or array" if key == "stop" else None)
    if data.get("stream_options") is not None and data.get("stream") is not True:
        # VERIFIED: BerriAI/litellm#5803, lobehub/lobehub#6735 (param stream_options, code null).
        _reject("The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options")


_TOP_LEVEL_TYPES: tuple[tuple[str, tuple[type, ...]], ...] = (
    ("stream", (bool,)),
    ("stream_options", (dict,)),
    ("parallel_tool_calls", (bool,)),
    ("max_tokens", (int,)),
    ("max_completion_tokens", (int,)),
    ("temperature", (int, float)),
    ("stop", (str, list)),
    ("tools", (list,)),
    ("tool_choice", (str, dict)),
)


def _plain_message(message: Any) -> bool:
    """A system, developer, user or tool message with text content, the shape most of a history has:
    it passes `_check_message`, which need not build the error paths it would name."""
    if type(message) is not dict or type(message.get("content")) is not str:
        return False
    role = message.get("role")
    if role == "tool":
        call_id = message.get("tool_call_id")
        return call_id is None or type(call_id) is str
    return role == "user" or role == "system" or role == "developer"


def _check_message(message: Any, index: int) -> None:
    path = f"messages[{index}]"
    _expect(message, path, dict)
    if "role" not in message:
        _missing(f"{path}.role")
    role = message["role"]
    _expect(role, f"{path}.role", str)
    if role not in ROLES:
        _invalid_value(role, ROLES, f"{path}.role")  # template VERIFIED, list of roles [INF]
    if role == "assistant":
        _check_assistant(message, index)
    elif role == "function":  # deprecated, but still accepted: a result paired by function name
        if "name" not in message:
            _missing(f"{path}.name")
        _expect(message["name"], f"{path}.name", str)
        if message.get("content") is not None:
            _check_content(message["content"], f"{path}.content")
    else:
        if "content" not in message:
            _missing(f"{path}.content")
        if message["content"] is None:
            _null_content(index)
        _check_content(message["content"], f"{path}.content")
        if role == "tool" and message.get("tool_call_id") is not None:
            _expect(message["tool_call_id"], f"{path}.tool_call_id", str)


def _check_assistant(message: Mapping[str, Any], index: int) -> None:
    path = f"messages[{index}]"
    calls = message.get("tool_calls")
    content = message.get("content")
    if content is None and calls is None and message.get("function_call") is None:
        _null_content(index)
    if content is not None:
        _check_content(content, f"{path}.content")
    if calls is None:
        return
    _expect(calls, f"{path}.tool_calls", list)
    if not calls:
        _empty_array(f"{path}.tool_calls")  # C6
    for position, call in enumerate(calls):
        _check_call(call, f"{path}.tool_calls[{position}]")


def _check_call(call: Any, path: str) -> None:
    _expect(call, path, dict)
    for key in ("id", "type", "function"):
        if key not in call:
            _missing(f"{path}.{key}")
    _expect(call["id"], f"{path}.id", str)
    _max_length(call["id"], f"{path}.id", MAX_CALL_ID)  # C7
    _check_function_type(call["type"], f"{path}.type")
    function = call["function"]
    _expect(function, f"{path}.function", dict)
    if "name" not in function:
        _missing(f"{path}.function.name")
    _check_name(function["name"], f"{path}.function.name")  # C9
    if "arguments" not in function:
        _missing(f"{path}.function.arguments")  # C10
    _expect(function["arguments"], f"{path}.function.arguments", str)


def _check_content(content: Any, path: str) -> None:
    _expect(content, path, str, list)
    if isinstance(content, str):
        return
    if not content:
        _empty_array(path)  # [INF] the API's empty-array template
    for position, part in enumerate(content):
        part_path = f"{path}[{position}]"
        _expect(part, part_path, dict)
        if "type" not in part:
            _missing(f"{part_path}.type")  # VERIFIED: langchain-ai/langgraphjs#506
        _expect(part["type"], f"{part_path}.type", str)
        if part["type"] not in PART_TYPES:
            _invalid_value(part["type"], PART_TYPES, f"{part_path}.type")  # aallam/openai-kotlin#320
        if part["type"] in ("text", "refusal"):
            if part["type"] not in part:
                _missing(f"{part_path}.{part['type']}")
            _expect(part[part["type"]], f"{part_path}.{part['type']}", str)


def _check_tools(tools: list[Any]) -> None:
    if not tools:
        _empty_array("tools")  # [INF] the API's empty-array template
    for position, tool in enumerate(tools):
        path = f"tools[{position}]"
        _expect(tool, path, dict)
        if "type" not in tool:
            _missing(f"{path}.type")
        _check_function_type(tool["type"], f"{path}.type")
        if "function" not in tool:
            _missing(f"{path}.function")
        function = tool["function"]
        _expect(function, f"{path}.function", dict)
        if "name" not in function:
            _missing(f"{path}.function.name")
        _check_name(function["name"], f"{path}.function.name")
        description = function.get("description")
        if description is not None:
            _expect(description, f"{path}.function.description", str)
            _max_length(description, f"{path}.function.description", MAX_DESCRIPTION)  # C11
        if function.get("parameters") is not None:
            _expect(function["parameters"], f"{path}.function.parameters", dict)


def _check_tool_choice(choice: Any) -> None:
    if choice is None:
        return
    if isinstance(choice, str):
        if choice not in TOOL_CHOICES:
            _invalid_value(choice, TOOL_CHOICES, "tool_choice")  # [INF] the API's invalid-value template
        return
    if "type" not in choice:
        _missing("tool_choice.type")
    kind = choice["type"]
    _expect(kind, "tool_choice.type", str)
    inner = {"function": "name", "custom": "name", "allowed_tools": "mode"}
    if kind not in inner:
        _invalid_value(kind, ("function", "custom", "allowed_tools"), "tool_choice.type")  # [INF]
    if kind not in choice:
        _missing(f"tool_choice.{kind}")
    _expect(choice[kind], f"tool_choice.{kind}", dict)
    key = inner[kind]
    if key not in choice[kind]:
        _missing(f"tool_choice.{kind}.{key}")
    _expect(choice[kind][key], f"tool_choice.{kind}.{key}", str)


def _check_function_type(kind: Any, path: str) -> None:
    _expect(kind, path, str)
    if kind == "custom":
        # A sandbox limit, not the API's: custom (free-form) tools are real but out of scope here.
        _reject(
            "Invalid value: 'custom'. The sandbox supports only tools of type 'function'.",
            path,
            "invalid_value",
        )
    if kind != "function":
        _invalid_value(kind, ("function", "custom"), path)  # [INF] list of supported values


def _check_name(name: Any, path: str) -> None:
    _expect(name, path, str)
    if not _NAME_RE.match(name):
        _reject(  # C9
            f"Invalid '{path}': string does not match pattern. Expected a string that matches the pattern "
            f"'{NAME_PATTERN}'.",
            path,
            "invalid_value",
        )
    _max_length(name, path, MAX_NAME)


# -- message templates -------------------------------------------------------------------------------


def _reject(message: str, param: str | None, code: str | None = None) -> NoReturn:
    raise Rejection(message, param=param, code=code)


def _missing(path: str) -> NoReturn:
    _reject(f"Missing required parameter: '{path}'.", path, "missing_required_parameter")


def _empty_array(path: str) -> NoReturn:
    _reject(
        f"Invalid '{path}': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        path,
        "empty_array",
    )


def _max_length(value: str, path: str, limit: int) -> None:
    if len(value) > limit:
        _reject(
            f"Invalid '{path}': string too long. Expected a string with maximum length {limit}, but got a "
            f"string with length {len(value)} instead.",
            path,
            "string_above_max_length",
        )


def _null_content(index: int) -> NoReturn:
    # C8 VERIFIED, with the dotted param form the pairing rules use.
    _reject("Invalid value for 'content': expected a string, got null.", f"messages.[{index}].content")


def _invalid_value(value: Any, allowed: tuple[str, ...], path: str) -> NoReturn:
    """ "Supported values are: 'a', 'b', and 'c'." as the API lists them (serial comma from three on)."""
    quoted = [f"'{item}'" for item in allowed]
    if len(quoted) == 1:
        listed = quoted[0]
    elif len(quoted) == 2:
        listed = f"{quoted[0]} and {quoted[1]}"
    else:
        listed = f"{', '.join(quoted[:-1])}, and {quoted[-1]}"
    _reject(f"Invalid value: '{value}'. Supported values are: {listed}.", path, "invalid_value")


_TYPE_NAMES: dict[type, str] = {
    bool: "a boolean",
    int: "an integer",
    float: "a decimal",
    str: "a string",
    list: "an array",
    dict: "an object",
}
_UNION_NAMES: dict[tuple[type, ...], str] = {
    (str, list): "one of a string or array of objects",  # VERIFIED: clusterzx/paperless-ai#748
    (int, float): "a number",
    (str, dict): "one of a string or object",
}


def _expect(value: Any, path: str, *kinds: type, expected: str | None = None) -> None:
    """Reject a value of the wrong JSON type. A boolean is not an integer here, as in JSON Schema."""
    if isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds):
        return
    if expected is None:
        expected = _TYPE_NAMES[kinds[0]] if len(kinds) == 1 else _UNION_NAMES[kinds]
    got = "null" if value is None else _TYPE_NAMES.get(type(value), "an unknown type")
    _reject(  # the template is VERIFIED for content; other paths and the code are [INF]
        f"Invalid type for '{path}': expected {expected}, but got {got} instead.", path, "invalid_type"
    )


def _no_constant(name: str) -> NoReturn:
    """NaN and Infinity are not JSON, though Python's parser accepts them."""
    raise ValueError(name)


_DECODER = json.JSONDecoder(parse_constant=_no_constant)
