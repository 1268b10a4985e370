"""Fake side of `POST /v1/responses`: the texts and the per-field checks the real API answers with,
and its error envelope (`wire_error`, OpenAI's own). Touches only request values; raises nothing
but `ErrorResponse`. `_parse` walks the body with these, in the API's order.

The real API checks the body in a fixed order and answers the first problem it finds: the JSON
itself, `model`, a missing `input`, unknown top-level keys, the `input` items, the other fields,
the server-state references, an empty `input`, and only then the pairing of `function_call`
items with their `function_call_output`s.

Sources for the texts. "[REF]": the API's documented and recorded texts.
"[OBS]": rows observed against the live API on 2026-08-30 and kept as a parity test by a public
proxy project (`/v1/responses rejects ... as the direct API does`); the messages, params and codes
below are copied from those rows. "[ISSUE]": quoted in a public issue (named where used).
"[INF]": no source found; the most faithful text we could write.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from ...messages._types import Role, Tool
from .._base import Rule
from .._json import decode
from .._openai import openai_error as wire_error  # the envelope Chat Completions answers with too

__all__ = [
    "EMPTY_INPUT",
    "ITEM_TYPES",
    "KNOWN_PARAMETERS",
    "MIN_OUTPUT_TOKENS",
    "MOVED_MESSAGES",
    "NEUTRAL_ROLES",
    "NON_JSON_MESSAGE",
    "ROLES",
    "SCALARS",
    "check_call_id",
    "check_function_tool",
    "check_item_id",
    "check_output_part",
    "check_part",
    "check_tool_choice",
    "fail",
    "invalid_value",
    "json_kind",
    "load_json",
    "matches",
    "missing",
    "unknown_parameter",
    "wire_error",
    "wrong_type",
]

NON_JSON_MESSAGE = (
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your "
    "HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. "
    "If you have trouble figuring out how to fix this, please contact us through our help center at "
    "help.openai.com.)"
)

# ResponseCreateParams in openai 3.57 (types/responses/response_create_params.py), plus `stream`.
KNOWN_PARAMETERS = tuple(
    """
    access_programs background background_options context_management conversation image include
    input instructions max_output_tokens max_tool_calls metadata model moderation
    parallel_tool_calls previous_response_id prompt prompt_cache_key prompt_cache_options
    prompt_cache_retention reasoning safety_identifier service_tier store stream stream_options
    temperature text tool_choice tools top_logprobs top_p truncation user
    """.split()
)

# [OBS] the list the API prints for an unknown `input[i].type`, in its order.
ITEM_TYPES = tuple(
    """
    additional_tools agent_message apply_patch_call apply_patch_call_output code_interpreter_call
    compaction compaction_trigger computer_call computer_call_output custom_tool_call
    custom_tool_call_output file_search_call function_call function_call_output
    image_generation_call item_reference local_shell_call local_shell_call_output
    mcp_approval_request mcp_approval_response mcp_call mcp_list_tools message multi_agent_call
    multi_agent_call_output program program_output reasoning shell_call shell_call_output
    tool_search_call tool_search_output web_search_call
    """.split()
)
ROLES = ("assistant", "system", "developer", "user")  # [OBS] in the API's order
_PART_TYPES = tuple(
    """
    input_text input_image input_audio output_text refusal input_file computer_screenshot
    summary_text encrypted_content
    """.split()
)
_ASSISTANT_PART_TYPES = ("output_text", "refusal")  # [OBS]
_INPUT_PART_TYPES = ("input_text", "input_image", "input_file", "scoped_content", "input_audio")  # [OBS]
_OUTPUT_PART_TYPES = ("input_text", "input_image", "input_file")  # [REF] function_call_output arrays
NEUTRAL_ROLES: dict[str, Role] = {
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
    "user": "user",
}
_TOOL_CHOICES = ("none", "auto", "required")
_CALL_ID_MAX = 64  # [REF] R7
_TOOL_NAME_MAX = 64  # [INF] the Chat Completions limit, which the docs state for both APIs
_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]+")
MIN_OUTPUT_TOKENS = 16  # [OBS]

SCALARS = (
    ("temperature", "a decimal"),
    ("parallel_tool_calls", "a boolean"),
    ("stream", "a boolean"),
    ("background", "a boolean"),
    ("max_output_tokens", "an integer"),
    ("instructions", "a string"),
    ("store", "a boolean"),
)

MOVED_MESSAGES = (
    "Unsupported parameter: 'messages'. In the Responses API, this parameter has moved to 'input'. "
    "Try again with the new parameter. See the API documentation for more information: "
    "https://platform.openai.com/docs/api-reference/responses/create."
)  # [OBS]
EMPTY_INPUT = "One of \"input\" or \"previous_response_id\" or 'prompt' or 'conversation' must be provided."


def fail(
    message: str,
    param: str | None = None,
    code: str | None = None,
    *,
    rule: Rule = Rule.MALFORMED,
    index: int | None = None,
    status: int = 400,
) -> NoReturn:
    raise wire_error(status, message, rule=rule, param=param, code=code, message_index=index)


def _reject_constant(name: str) -> Any:
    raise ValueError(name)  # NaN and Infinity are not JSON


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def load_json(body: bytes) -> Any:
    try:
        return decode(body, _DECODER)
    except (ValueError, RecursionError):
        fail(NON_JSON_MESSAGE)


def json_kind(value: Any, *, top: bool = False) -> str:
    """How the API names a JSON value's type in `... but got <kind> instead.`"""
    if value is None:
        return "an object" if top else "null"  # [OBS] a top-level null is reported as "an object"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"  # [INF] the API's word for a number it expects
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _choices(values: Sequence[str]) -> str:
    """`'a' and 'b'`, `'a', 'b', and 'c'`: the API's list style."""
    quoted = [f"'{value}'" for value in values]
    if len(quoted) <= 2:
        return " and ".join(quoted)
    return ", ".join(quoted[:-1]) + ", and " + quoted[-1]


def invalid_value(value: Any, supported: Sequence[str], param: str, *, index: int | None = None) -> NoReturn:
    shown = value if isinstance(value, str) else ""  # [OBS] a non-string prints as ''
    fail(
        f"Invalid value: '{shown}'. Supported values are: {_choices(supported)}.",
        param,
        "invalid_value",
        index=index,
    )


def wrong_type(path: str, expected: str, value: Any, *, top: bool = False, index: int | None = None) -> NoReturn:
    fail(
        f"Invalid type for '{path}': expected {expected}, but got {json_kind(value, top=top)} instead.",
        path,
        "invalid_type",
        index=index,
    )


def missing(path: str, *, index: int | None = None) -> NoReturn:
    fail(f"Missing required parameter: '{path}'.", path, "missing_required_parameter", index=index)


def matches(value: Any, expected: str) -> bool:
    if expected == "a boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False  # JSON true is not a number
    if expected == "an integer":
        return isinstance(value, int)
    if expected == "a decimal":
        return isinstance(value, (int, float))
    return isinstance(value, str)


def _edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i]
        for j, char_b in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)))
        previous = current
    return previous[-1]


def unknown_parameter(key: str, sent: Mapping[str, Any]) -> NoReturn:
    """[OBS] A suggestion within edit distance 2, nearest first, never a key the body already has."""
    near = sorted(
        (distance, known)
        for known in KNOWN_PARAMETERS
        if known not in sent and (distance := _edit_distance(key, known)) <= 2
    )
    hint = " Did you mean " + " or ".join(f"'{known}'" for _, known in near) + "?" if near else ""
    fail(f"Unknown parameter: '{key}'.{hint}", key, "unknown_parameter")


def check_function_tool(path: str, tool: Mapping[str, Any]) -> Tool:
    if "name" not in tool:
        missing(f"{path}.name")  # [OBS], also for a Chat-shaped {"function": {...}} tool
    name = tool["name"]
    if not isinstance(name, str):
        wrong_type(f"{path}.name", "a string", name)  # [INF]
    if len(name) > _TOOL_NAME_MAX:
        fail(
            f"Invalid '{path}.name': string too long. Expected a string with maximum length "
            f"{_TOOL_NAME_MAX}, but got a string with length {len(name)} instead.",
            f"{path}.name",
            "string_above_max_length",
        )  # [INF] REF template
    if not _TOOL_NAME.fullmatch(name):
        fail(
            f"Invalid '{path}.name': string does not match pattern. Expected a string that matches "
            "the pattern '^[a-zA-Z0-9_-]+$'.",
            f"{path}.name",
            "invalid_value",
        )  # [INF] C9
    description = tool.get("description")
    if description is not None and not isinstance(description, str):
        wrong_type(f"{path}.description", "a string", description)  # [INF]
    parameters = tool.get("parameters")
    if parameters is not None and not isinstance(parameters, dict):
        wrong_type(f"{path}.parameters", "an object", parameters)  # [INF]
    strict = tool.get("strict")
    if strict is not None and not isinstance(strict, bool):
        wrong_type(f"{path}.strict", "a boolean", strict)  # [INF]
    schema = parameters if parameters is not None else {"type": "object", "properties": {}}
    return Tool(name=name, description=description or "", parameters=schema)


def check_tool_choice(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        if value not in _TOOL_CHOICES:
            invalid_value(value, _TOOL_CHOICES, "tool_choice")  # [OBS]
        return value
    if not isinstance(value, dict):
        wrong_type("tool_choice", "one of an object or 'none', 'auto', or 'required'", value, top=True)
    kind = value.get("type")
    if not isinstance(kind, str):
        missing("tool_choice.type")  # [INF]
    if kind in ("function", "custom"):
        name = value.get("name")
        if not isinstance(name, str):
            missing("tool_choice.name")  # [OBS], also for a Chat-shaped {"function": {...}}
        return name
    if kind == "allowed_tools":
        return "required" if value.get("mode") == "required" else "auto"
    return "required"  # a hosted tool forced by type: some tool must be used


def check_part(path: str, part: Any, role: str, at: int) -> str | None:
    if not isinstance(part, dict):
        wrong_type(path, "an object", part, index=at)  # [INF]
    if "type" not in part:
        missing(f"{path}.type", index=at)  # [INF]
    kind = part["type"]
    if kind not in _PART_TYPES and kind != "scoped_content":
        invalid_value(kind, _PART_TYPES, f"{path}.type", index=at)  # [OBS]
    allowed = _ASSISTANT_PART_TYPES if role == "assistant" else _INPUT_PART_TYPES
    if kind not in allowed:
        invalid_value(kind, allowed, path, index=at)  # [OBS]
    key = {"input_text": "text", "output_text": "text", "refusal": "refusal"}.get(kind)
    if key is None:
        return None  # images, files and audio have no place in the neutral model
    if key not in part:
        missing(f"{path}.{key}", index=at)  # [OBS]
    if not isinstance(part[key], str):
        wrong_type(f"{path}.{key}", "a string", part[key], index=at)  # [INF]
    text: str = part[key]
    return text


def check_item_id(path: str, item: Mapping[str, Any], prefix: str, at: int) -> None:
    item_id = item.get("id")
    if item_id is None:
        return
    if not isinstance(item_id, str):
        wrong_type(f"{path}.id", "a string", item_id, index=at)  # [INF]
    if not item_id.startswith(prefix):
        # Verified for function calls ('fc'); the 'msg' rule for messages is reported, not quoted.
        fail(
            f"Invalid '{path}.id': '{item_id}'. Expected an ID that begins with '{prefix}'.",
            f"{path}.id",
            "invalid_value",
            index=at,
        )


def check_call_id(path: str, item: Mapping[str, Any], at: int) -> str:
    if "call_id" not in item:
        missing(f"{path}.call_id", index=at)  # [REF] R8
    call_id = item["call_id"]
    if not isinstance(call_id, str):
        wrong_type(f"{path}.call_id", "a string", call_id, index=at)  # [INF]
    if call_id == "":
        fail(
            f"Invalid '{path}.call_id': empty string. Expected a string with minimum length 1, but got "
            "an empty string instead.",
            f"{path}.call_id",
            "empty_string",
            index=at,
        )  # R6
    if len(call_id) > _CALL_ID_MAX:
        fail(
            f"Invalid '{path}.call_id': string too long. Expected a string with maximum length "
            f"{_CALL_ID_MAX}, but got a string with length {len(call_id)} instead.",
            f"{path}.call_id",
            "string_above_max_length",
            index=at,
        )  # R7
    return call_id


def check_output_part(path: str, part: Any, at: int) -> str:
    if not isinstance(part, dict):
        wrong_type(path, "an object", part, index=at)  # [INF]
    kind = part.get("type")
    if kind not in _OUTPUT_PART_TYPES:
        invalid_value(kind, _OUTPUT_PART_TYPES, f"{path}.type", index=at)  # [INF]
    if kind != "input_text":
        return ""
    if "text" not in part:
        missing(f"{path}.text", index=at)
    text = part["text"]
    if not isinstance(text, str):
        wrong_type(f"{path}.text", "a string", text, index=at)
    return text
