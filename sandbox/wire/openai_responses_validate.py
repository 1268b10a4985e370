"""Fake side of `POST /v1/responses`: read a request body the way the real API does.

The real API checks the body in a fixed order and answers the first problem it finds: the JSON
itself, `model`, a missing `input`, unknown top-level keys, the `input` items, the other fields,
the server-state references, an empty `input`, and only then the pairing of `function_call`
items with their `function_call_output`s (R2, R1, R3 of wire-openai.md section 4.2).

Sources for the texts. "[REF]": shared/reference/wire-openai.md (sections 4 and 4.2).
"[OBS]": rows observed against the live API on 2026-08-30 and kept as a parity test by a public
proxy project (`/v1/responses rejects ... as the direct API does`); the messages, params and codes
below are copied from those rows. "[ISSUE]": quoted in a public issue (named where used).
"[INF]": no source found; the most faithful text we could write.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from .._types import Message, Part, Reasoning, Role, Text, Tool, ToolCall, ToolResult
from ._base import Conversation, Rule, WireError
from ._openai import openai_error

__all__ = ["NON_JSON_MESSAGE", "parse_request", "wire_error"]

NON_JSON_MESSAGE = (
    "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your "
    "HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. "
    "If you have trouble figuring out how to fix this, please contact us through our help center at "
    "help.openai.com.)"
)

# ResponseCreateParams in openai 3.57 (types/responses/response_create_params.py), plus `stream`.
_KNOWN_PARAMETERS = tuple(
    """
    access_programs background background_options context_management conversation image include
    input instructions max_output_tokens max_tool_calls metadata model moderation
    parallel_tool_calls previous_response_id prompt prompt_cache_key prompt_cache_options
    prompt_cache_retention reasoning safety_identifier service_tier store stream stream_options
    temperature text tool_choice tools top_logprobs top_p truncation user
    """.split()
)

# [OBS] the list the API prints for an unknown `input[i].type`, in its order.
_ITEM_TYPES = tuple(
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
_ROLES = ("assistant", "system", "developer", "user")  # [OBS] in the API's order
_PART_TYPES = tuple(
    """
    input_text input_image input_audio output_text refusal input_file computer_screenshot
    summary_text encrypted_content
    """.split()
)
_ASSISTANT_PART_TYPES = ("output_text", "refusal")  # [OBS]
_INPUT_PART_TYPES = ("input_text", "input_image", "input_file", "scoped_content", "input_audio")  # [OBS]
_OUTPUT_PART_TYPES = ("input_text", "input_image", "input_file")  # [REF] function_call_output arrays
_NEUTRAL_ROLES: dict[str, Role] = {
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
    "user": "user",
}
_TOOL_CHOICES = ("none", "auto", "required")
_CALL_ID_MAX = 64  # [REF] R7
_TOOL_NAME_MAX = 64  # [INF] the Chat Completions limit, which the docs state for both APIs
_MIN_OUTPUT_TOKENS = 16  # [OBS]

_SCALARS = (
    ("temperature", "a decimal"),
    ("parallel_tool_calls", "a boolean"),
    ("stream", "a boolean"),
    ("background", "a boolean"),
    ("max_output_tokens", "an integer"),
    ("instructions", "a string"),
    ("store", "a boolean"),
)

_MOVED_MESSAGES = (
    "Unsupported parameter: 'messages'. In the Responses API, this parameter has moved to 'input'. "
    "Try again with the new parameter. See the API documentation for more information: "
    "https://platform.openai.com/docs/api-reference/responses/create."
)  # [OBS]
_EMPTY_INPUT = "One of \"input\" or \"previous_response_id\" or 'prompt' or 'conversation' must be provided."


def wire_error(
    status: int,
    message: str,
    *,
    rule: Rule,
    param: str | None = None,
    code: str | None = None,
    message_index: int | None = None,
) -> WireError:
    """The OpenAI error envelope."""
    error_type = "server_error" if status >= 500 else "invalid_request_error"
    envelope = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    return openai_error(status, envelope, rule=rule, message_index=message_index)


def parse_request(body: bytes) -> Conversation:
    """Validate `body` like `POST /v1/responses` and return it in the neutral model."""
    data = _load_json(body)
    if not isinstance(data, dict):
        # [INF] no public report of a JSON body that is not an object.
        _fail(f"Invalid type for 'body': expected an object, but got {_kind(data, top=True)} instead.")
    return _Parser(data).run()


def _fail(
    message: str,
    param: str | None = None,
    code: str | None = None,
    *,
    rule: Rule = Rule.MALFORMED,
    index: int | None = None,
    status: int = 400,
) -> NoReturn:
    raise wire_error(status, message, rule=rule, param=param, code=code, message_index=index)


def _load_json(body: bytes) -> Any:
    def reject_constant(name: str) -> Any:
        raise ValueError(name)  # NaN and Infinity are not JSON

    try:
        return json.loads(body, parse_constant=reject_constant)
    except (ValueError, RecursionError):
        _fail(NON_JSON_MESSAGE)


def _kind(value: Any, *, top: bool = False) -> str:
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


def _invalid_value(value: Any, supported: Sequence[str], param: str, *, index: int | None = None) -> NoReturn:
    shown = value if isinstance(value, str) else ""  # [OBS] a non-string prints as ''
    _fail(
        f"Invalid value: '{shown}'. Supported values are: {_choices(supported)}.",
        param,
        "invalid_value",
        index=index,
    )


def _wrong_type(path: str, expected: str, value: Any, *, top: bool = False, index: int | None = None) -> NoReturn:
    _fail(
        f"Invalid type for '{path}': expected {expected}, but got {_kind(value, top=top)} instead.",
        path,
        "invalid_type",
        index=index,
    )


def _missing(path: str, *, index: int | None = None) -> NoReturn:
    _fail(f"Missing required parameter: '{path}'.", path, "missing_required_parameter", index=index)


def _matches(value: Any, expected: str) -> bool:
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


def _unknown_parameter(key: str, sent: Mapping[str, Any]) -> NoReturn:
    """[OBS] A suggestion within edit distance 2, nearest first, never a key the body already has."""
    near = sorted(
        (distance, known)
        for known in _KNOWN_PARAMETERS
        if known not in sent and (distance := _edit_distance(key, known)) <= 2
    )
    hint = " Did you mean " + " or ".join(f"'{known}'" for _, known in near) + "?" if near else ""
    _fail(f"Unknown parameter: '{key}'.{hint}", key, "unknown_parameter")


@dataclass
class _Turn:
    """A neutral message being built; assistant items that follow each other share one."""

    role: Role
    path: str
    parts: list[Part] = field(default_factory=list)


@dataclass(frozen=True)
class _Ref:
    """Where a call, an output or an item id sits: its input index and its neutral message."""

    key: str
    item: int
    message: int
    item_type: str = ""


class _Parser:
    """One walk over a request body: schema checks in the API's order, then pairing."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.turns: list[_Turn] = []
        self.open_assistant = False
        self.calls: list[_Ref] = []
        self.outputs: list[_Ref] = []
        self.item_ids: list[_Ref] = []
        instructions = data.get("instructions")
        if isinstance(instructions, str):
            # `instructions` is the system prompt: neutral message 0, so every index below counts it.
            self.turns.append(_Turn("system", "instructions", [Text(instructions)]))

    def run(self) -> Conversation:
        data = self.data
        self._check_model()
        if "input" not in data:
            _missing("input")  # [OBS] before unknown keys, after `model`
        for key in data:
            if key == "messages":
                _fail(_MOVED_MESSAGES, None, "unsupported_parameter")
            if key not in _KNOWN_PARAMETERS:
                _unknown_parameter(key, data)
        self._check_input(data["input"])
        tools = self._check_tools(data.get("tools"))
        tool_choice = self._check_tool_choice(data.get("tool_choice"))
        self._check_scalars()
        self._check_server_state()
        if data["input"] in ("", []):
            _fail(_EMPTY_INPUT, None, "missing_required_parameter")  # [OBS] after the state phase
        self._check_pairing()
        return self._conversation(tools, tool_choice)

    # -- top level -----------------------------------------------------------------------------

    def _check_model(self) -> None:
        if "model" not in self.data:
            _missing("model")
        model = self.data["model"]
        if not isinstance(model, str):
            _wrong_type("model", "a string", model, top=True)
        if model == "":
            _fail("The requested model '' does not exist.", "model", "model_not_found")  # [OBS]

    def _check_input(self, value: Any) -> None:
        if value is None:
            _wrong_type("input", "a string", value, top=True)  # [OBS] sic: "expected a string"
        if isinstance(value, str):
            if value:
                self._new_turn("user", "input").parts.append(Text(value))
            return
        if not isinstance(value, list):
            _wrong_type("input", "one of a string or array of input items", value, top=True)
        for index, item in enumerate(value):
            self._check_item(index, item)

    def _check_tools(self, value: Any) -> list[Tool]:
        if value is None:
            return []
        if not isinstance(value, list):
            _wrong_type("tools", "an array of tools", value, top=True)  # [OBS]
        tools = []
        for index, tool in enumerate(value):
            path = f"tools[{index}]"
            if not isinstance(tool, dict):
                _wrong_type(path, "an object", tool)  # [INF]
            if "type" not in tool:
                _missing(f"{path}.type")  # [OBS]
            if not isinstance(tool["type"], str):
                _wrong_type(f"{path}.type", "a string", tool["type"])  # [INF]
            if tool["type"] == "function":
                tools.append(self._check_function_tool(path, tool))
            # Hosted tools (web_search, file_search, ...) are legal; the scripted model never calls them.
        return tools

    @staticmethod
    def _check_function_tool(path: str, tool: Mapping[str, Any]) -> Tool:
        if "name" not in tool:
            _missing(f"{path}.name")  # [OBS], also for a Chat-shaped {"function": {...}} tool
        name = tool["name"]
        if not isinstance(name, str):
            _wrong_type(f"{path}.name", "a string", name)  # [INF]
        if len(name) > _TOOL_NAME_MAX:
            _fail(
                f"Invalid '{path}.name': string too long. Expected a string with maximum length "
                f"{_TOOL_NAME_MAX}, but got a string with length {len(name)} instead.",
                f"{path}.name",
                "string_above_max_length",
            )  # [INF] REF template
        if not name or not all(char.isascii() and (char.isalnum() or char in "_-") for char in name):
            _fail(
                f"Invalid '{path}.name': string does not match pattern. Expected a string that matches "
                "the pattern '^[a-zA-Z0-9_-]+$'.",
                f"{path}.name",
                "invalid_value",
            )  # [INF] C9
        description = tool.get("description")
        if description is not None and not isinstance(description, str):
            _wrong_type(f"{path}.description", "a string", description)  # [INF]
        parameters = tool.get("parameters")
        if parameters is not None and not isinstance(parameters, dict):
            _wrong_type(f"{path}.parameters", "an object", parameters)  # [INF]
        strict = tool.get("strict")
        if strict is not None and not isinstance(strict, bool):
            _wrong_type(f"{path}.strict", "a boolean", strict)  # [INF]
        schema = parameters if parameters is not None else {"type": "object", "properties": {}}
        return Tool(name, description or "", schema)

    @staticmethod
    def _check_tool_choice(value: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, str):
            if value not in _TOOL_CHOICES:
                _invalid_value(value, _TOOL_CHOICES, "tool_choice")  # [OBS]
            return value
        if not isinstance(value, dict):
            _wrong_type("tool_choice", "one of an object or 'none', 'auto', or 'required'", value, top=True)
        kind = value.get("type")
        if not isinstance(kind, str):
            _missing("tool_choice.type")  # [INF]
        if kind in ("function", "custom"):
            name = value.get("name")
            if not isinstance(name, str):
                _missing("tool_choice.name")  # [OBS], also for a Chat-shaped {"function": {...}}
            return name
        if kind == "allowed_tools":
            return "required" if value.get("mode") == "required" else "auto"
        return "required"  # a hosted tool forced by type: some tool must be used

    def _check_scalars(self) -> None:
        """The plain fields a tool loop sends, in the order the API checks them [OBS]."""
        for key, expected in _SCALARS:
            value = self.data.get(key)
            if value is not None and not _matches(value, expected):
                _wrong_type(key, expected, value, top=True)
        tokens = self.data.get("max_output_tokens")
        if tokens is not None and tokens < _MIN_OUTPUT_TOKENS:
            _fail(
                "Invalid 'max_output_tokens': integer below minimum value. "
                f"Expected a value >= {_MIN_OUTPUT_TOKENS}, but got {tokens} instead.",
                "max_output_tokens",
                "integer_below_min_value",
            )

    def _check_server_state(self) -> None:
        """The sandbox stores nothing, so every stored-state reference is one the server never saw."""
        previous = self.data.get("previous_response_id")
        if previous is not None:
            if not isinstance(previous, str):
                _wrong_type("previous_response_id", "a string", previous, top=True)
            _fail(
                f"Previous response with id '{previous}' not found.",
                "previous_response_id",
                "previous_response_not_found",
            )  # [OBS]
        conversation = self.data.get("conversation")
        conversation_id = conversation.get("id") if isinstance(conversation, dict) else conversation
        if isinstance(conversation_id, str):
            _fail(f"Conversation with id '{conversation_id}' not found.", status=404)  # [OBS]

    # -- input items ---------------------------------------------------------------------------

    def _index_for(self, role: Role) -> int:
        """The neutral index the item being checked belongs to (for the teaching transcript)."""
        joins = role == "assistant" and self.open_assistant
        return len(self.turns) - 1 if joins else len(self.turns)

    def _new_turn(self, role: Role, path: str) -> _Turn:
        if role == "assistant" and self.open_assistant:
            return self.turns[-1]
        self.open_assistant = role == "assistant"
        turn = _Turn(role, path)
        self.turns.append(turn)
        return turn

    def _check_item(self, index: int, item: Any) -> None:
        path = f"input[{index}]"
        if not isinstance(item, dict):
            _wrong_type(path, "an input item", item, index=len(self.turns))  # [OBS]
        kind = item.get("type", "message")
        if not isinstance(kind, str) or kind not in _ITEM_TYPES:
            _invalid_value(kind, _ITEM_TYPES, path, index=len(self.turns))  # [OBS]
        if kind == "message":
            self._check_message(path, item)
        elif kind == "function_call":
            self._check_function_call(index, path, item)
        elif kind == "function_call_output":
            self._check_function_call_output(index, path, item)
        elif kind == "reasoning":
            self._check_reasoning(path, item)
        # Other item types (hosted tool calls, ...) are legal input that the scripted model never
        # produces: accepted, and left out of the neutral conversation.
        item_id = item.get("id")
        if isinstance(item_id, str):
            owned = ("message", "function_call", "function_call_output", "reasoning")
            owner = len(self.turns) - 1 if kind in owned else -1
            self.item_ids.append(_Ref(item_id, index, owner, kind))

    def _check_message(self, path: str, item: Mapping[str, Any]) -> None:
        role = item.get("role")
        if not isinstance(role, str) or role not in _ROLES:
            _invalid_value(role, _ROLES, path, index=len(self.turns))  # [OBS]
        neutral_role = _NEUTRAL_ROLES[role]
        at = self._index_for(neutral_role)
        self._check_item_id(path, item, "msg", at)
        if "content" not in item:
            _missing(f"{path}.content", index=at)  # [OBS]
        content = item["content"]
        texts: list[str | None]
        if isinstance(content, str):
            texts = [content]
        elif isinstance(content, list):
            texts = [self._check_part(f"{path}.content[{j}]", part, role, at) for j, part in enumerate(content)]
        else:
            _wrong_type(f"{path}.content", "one of a string or array of objects", content, index=at)  # [INF]
        self._new_turn(neutral_role, path).parts.extend(Text(text) for text in texts if text is not None)

    @staticmethod
    def _check_part(path: str, part: Any, role: str, at: int) -> str | None:
        if not isinstance(part, dict):
            _wrong_type(path, "an object", part, index=at)  # [INF]
        if "type" not in part:
            _missing(f"{path}.type", index=at)  # [INF]
        kind = part["type"]
        if kind not in _PART_TYPES and kind != "scoped_content":
            _invalid_value(kind, _PART_TYPES, f"{path}.type", index=at)  # [OBS]
        allowed = _ASSISTANT_PART_TYPES if role == "assistant" else _INPUT_PART_TYPES
        if kind not in allowed:
            _invalid_value(kind, allowed, path, index=at)  # [OBS]
        key = {"input_text": "text", "output_text": "text", "refusal": "refusal"}.get(kind)
        if key is None:
            return None  # images, files and audio have no place in the neutral model
        if key not in part:
            _missing(f"{path}.{key}", index=at)  # [OBS]
        if not isinstance(part[key], str):
            _wrong_type(f"{path}.{key}", "a string", part[key], index=at)  # [INF]
        text: str = part[key]
        return text

    @staticmethod
    def _check_item_id(path: str, item: Mapping[str, Any], prefix: str, at: int) -> None:
        item_id = item.get("id")
        if item_id is None:
            return
        if not isinstance(item_id, str):
            _wrong_type(f"{path}.id", "a string", item_id, index=at)  # [INF]
        if not item_id.startswith(prefix):
            # Verified for function calls ('fc'); the 'msg' rule for messages is reported, not quoted.
            _fail(
                f"Invalid '{path}.id': '{item_id}'. Expected an ID that begins with '{prefix}'.",
                f"{path}.id",
                "invalid_value",
                index=at,
            )

    @staticmethod
    def _check_call_id(path: str, item: Mapping[str, Any], at: int) -> str:
        if "call_id" not in item:
            _missing(f"{path}.call_id", index=at)  # [REF] R8
        call_id = item["call_id"]
        if not isinstance(call_id, str):
            _wrong_type(f"{path}.call_id", "a string", call_id, index=at)  # [INF]
        if call_id == "":
            _fail(
                f"Invalid '{path}.call_id': empty string. Expected a string with minimum length 1, but got "
                "an empty string instead.",
                f"{path}.call_id",
                "empty_string",
                index=at,
            )  # R6
        if len(call_id) > _CALL_ID_MAX:
            _fail(
                f"Invalid '{path}.call_id': string too long. Expected a string with maximum length "
                f"{_CALL_ID_MAX}, but got a string with length {len(call_id)} instead.",
                f"{path}.call_id",
                "string_above_max_length",
                index=at,
            )  # R7
        return call_id

    def _check_function_call(self, index: int, path: str, item: Mapping[str, Any]) -> None:
        at = self._index_for("assistant")
        call_id = self._check_call_id(path, item, at)  # [INF] field order: call_id, name, arguments, id
        strings = {}
        for key in ("name", "arguments"):
            if key not in item:
                _missing(f"{path}.{key}", index=at)
            if not isinstance(item[key], str):
                _wrong_type(f"{path}.{key}", "a string", item[key], index=at)
            strings[key] = item[key]
        self._check_item_id(path, item, "fc", at)  # [ISSUE] "Expected an ID that begins with 'fc'."
        try:
            arguments = json.loads(strings["arguments"])
        except (ValueError, RecursionError):
            arguments = None
        # The API passes arguments through as an opaque string (C15); the neutral model wants a dict.
        if not isinstance(arguments, dict):
            arguments = {}
        meta = {"item_id": item["id"]} if isinstance(item.get("id"), str) else {}
        self._new_turn("assistant", path).parts.append(ToolCall(call_id, strings["name"], arguments, meta=meta))
        self.calls.append(_Ref(call_id, index, at))

    def _check_reasoning(self, path: str, item: Mapping[str, Any]) -> None:
        """A reasoning item joins the assistant turn it opens; its echo rules run in the replay
        (`openai_responses_reasoning.check_echo`), which knows what the fake sent."""
        at = self._index_for("assistant")
        if "id" not in item:
            _missing(f"{path}.id", index=at)  # [INF] REF template; the SDK's param requires it
        self._check_item_id(path, item, "rs", at)  # [INF] by analogy with 'fc' and 'msg'
        if "summary" not in item:
            _missing(f"{path}.summary", index=at)  # [INF] REF template; the SDK's param requires it
        summary = item["summary"]
        if not isinstance(summary, list):
            _wrong_type(f"{path}.summary", "an array", summary, index=at)  # [INF]
        content = item.get("encrypted_content")
        if content is not None and not isinstance(content, str):
            _wrong_type(f"{path}.encrypted_content", "a string", content, index=at)  # [INF] REF template
        texts = [part["text"] for part in summary if isinstance(part, dict) and isinstance(part.get("text"), str)]
        reasoning = Reasoning.from_wire("openai-responses", item, summary="\n\n".join(texts))
        self._new_turn("assistant", path).parts.append(reasoning)

    def _check_function_call_output(self, index: int, path: str, item: Mapping[str, Any]) -> None:
        at = len(self.turns)
        call_id = self._check_call_id(path, item, at)
        if "output" not in item:
            _missing(f"{path}.output", index=at)
        output = item["output"]
        if isinstance(output, list):
            output = "".join(self._check_output_part(f"{path}.output[{j}]", part, at) for j, part in enumerate(output))
        elif not isinstance(output, str):
            _wrong_type(f"{path}.output", "one of a string or array of objects", output, index=at)  # [INF]
        item_id = item.get("id")
        if item_id is not None and not isinstance(item_id, str):
            _wrong_type(f"{path}.id", "a string", item_id, index=at)  # [INF]
        self._new_turn("tool", path).parts.append(ToolResult(call_id, output))
        self.outputs.append(_Ref(call_id, index, at))

    @staticmethod
    def _check_output_part(path: str, part: Any, at: int) -> str:
        if not isinstance(part, dict):
            _wrong_type(path, "an object", part, index=at)  # [INF]
        kind = part.get("type")
        if kind not in _OUTPUT_PART_TYPES:
            _invalid_value(kind, _OUTPUT_PART_TYPES, f"{path}.type", index=at)  # [INF]
        if kind != "input_text":
            return ""
        if "text" not in part:
            _missing(f"{path}.text", index=at)
        text = part["text"]
        if not isinstance(text, str):
            _wrong_type(f"{path}.text", "a string", text, index=at)
        return text

    # -- pairing (4.3: R2, then R1, then a duplicated output, then R3) ------------------------

    def _check_pairing(self) -> None:
        """Each output answers one earlier call with its call_id, anywhere before it in the input."""
        waiting: dict[str, list[_Ref]] = {}
        orphan: _Ref | None = None
        duplicate: _Ref | None = None
        outputs = {output.item for output in self.outputs}
        for ref in sorted([*self.calls, *self.outputs], key=lambda ref: ref.item):
            if ref.item not in outputs:
                waiting.setdefault(ref.key, []).append(ref)
            elif waiting.get(ref.key):
                waiting[ref.key].pop(0)
            elif ref.key in waiting:
                duplicate = duplicate or ref  # every call with this id already has its output
            else:
                orphan = orphan or ref  # also a result placed BEFORE its call: [INF] by reading R2
        if orphan is not None:
            _fail(
                f"No tool call found for function call output with call_id {orphan.key}.",
                "input",
                rule=self._orphan_rule(orphan),
                index=orphan.message,
            )
        unanswered = sorted((ref for refs in waiting.values() for ref in refs), key=lambda ref: ref.item)
        if unanswered:
            first = unanswered[0]
            _fail(
                f"No tool output found for function call {first.key}.",
                "input",
                rule=Rule.MISSING_RESULT,
                index=first.message,
            )
        if duplicate is not None:
            # [ISSUE] NousResearch/hermes-agent#102629 quotes this 400 through a gateway's relay
            # ("Upstream request failed: [invalid_request_error] ..."); that the upstream was OpenAI, and
            # the param, are inferred.
            _fail(
                f"Duplicate function_call_output for call_id '{duplicate.key}'. Each function_call must have "
                "exactly one matching function_call_output",
                "input",
                rule=Rule.DUPLICATE_RESULT,
                index=duplicate.message,
            )
        seen: set[str] = set()
        for ref in self.item_ids:
            if ref.key in seen:
                rule = Rule.DUPLICATE_RESULT if ref.item_type == "function_call_output" else Rule.DUPLICATE_TURN
                _fail(
                    f"Duplicate item found with id {ref.key}. Remove duplicate items from your input and try again.",
                    "input",
                    rule=rule,
                    index=ref.message if ref.message >= 0 else None,
                )
            seen.add(ref.key)

    def _orphan_rule(self, output: _Ref) -> Rule:
        """Which mistake an unmatched output most likely is, so the hint can say what to fix."""
        if any(call.key == output.key for call in self.calls):
            return Rule.RESULT_WITHOUT_TURN  # the results came before the turn that calls them
        before = [turn for turn in self.turns[: output.message] if turn.role == "assistant"]
        if not before or not any(isinstance(part, ToolCall) for part in before[-1].parts):
            return Rule.RESULT_WITHOUT_TURN  # the turn is missing, or was rebuilt as text
        return Rule.UNKNOWN_CALL_ID

    def _conversation(self, tools: list[Tool], tool_choice: str | None) -> Conversation:
        return Conversation(
            model=self.data["model"],
            messages=[Message(turn.role, turn.parts) for turn in self.turns],
            paths=[turn.path for turn in self.turns],
            tools=tools,
            tool_choice=tool_choice,
            stream=self.data.get("stream") is True,
            raw=self.data,
        )
