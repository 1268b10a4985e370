"""How the fake Gemini reads a `generateContent` body: JSON, proto field checks, then the turn rules.

Google's front end converts the JSON body to a protobuf before the model backend sees it, so a
request fails in three layers, and this module checks them in the same order:

1. JSON and proto3-JSON conversion (`Invalid JSON payload received. ...`, `Invalid value at ...`):
   the first problem wins. Texts follow protobuf's `JsonStreamParser` / `ProtoWriter`.
2. Field validation (`* GenerateContentRequest.<path>: ...\\n`): every violation is listed, one per
   line, as the real API does.
3. The backend's turn rules (reference B.6: G1, G2, G3 and the role check), walking `contents`.

Nothing here knows about the neutral model's message indexes: a `Rejection` names the offending
`contents` index and `gemini.py` turns it into a `WireError`.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .._types import Tool
from ._base import Rule

__all__ = [
    "ParsedRequest",
    "Rejection",
    "WireContent",
    "WirePart",
    "check_fields",
    "check_order",
    "merge_model_runs",
    "read_request",
]

_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1beta."
_STRUCT = "type.googleapis.com/google.protobuf.Struct"
_INVALID_JSON = "Invalid JSON payload received."
_MAX_DEPTH = 100  # protobuf's JsonStreamParser default recursion limit

G1 = "Please ensure that function call turn comes immediately after a user turn or after a function response turn."
G2 = "Please ensure that function response turn comes immediately after a function call turn."
G3 = (
    "Please ensure that the number of function response parts is equal to the number of function call "
    "parts of the function call turn."
)
ROLE = "Please use a valid role: user, model."
MIXED = (  # googleapis/python-genai#81, verbatim
    "Please ensure that function call turn contains at least one function_call part which can not be "
    "mixed with function_response parts."
)
_BAD_FUNCTION_NAME = (
    "Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, "
    "0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 64."
)
_FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}")

# GenerateContentRequest's fields (lowerCamel; the snake_case spelling is accepted too).
_TOP_LEVEL = {
    "model", "contents", "systemInstruction", "tools", "toolConfig", "safetySettings",
    "generationConfig", "cachedContent", "labels", "serviceTier", "store",
}  # fmt: skip
# Part's `data` oneof: exactly one may be set.
_DATA = {
    "text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode",
    "codeExecutionResult", "toolCall", "toolResponse",
}  # fmt: skip
_MODES = ("MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED")


@functools.lru_cache(maxsize=512)
def _snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


_TOP_LEVEL_NAMES = _TOP_LEVEL | {_snake(name) for name in _TOP_LEVEL}
_DATA_NAMES = _DATA | {_snake(name) for name in _DATA}


class Rejection(Exception):
    """A request the real API refuses with 400 INVALID_ARGUMENT and this exact message."""

    def __init__(
        self,
        message: str,
        rule: Rule = Rule.MALFORMED,
        *,
        content: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.rule = rule
        self.content = content
        """The `contents` index that broke the rule, when one did."""
        self.field = field
        """For proto conversion errors: the field path the body's `fieldViolations` name ('' = top level)."""


@dataclass(frozen=True)
class WirePart:
    kind: Literal["text", "call", "response", "other", "empty"]
    """`other` is data the neutral model has no place for (images, code); `empty` sets no data at all."""
    text: str = ""
    name: str = ""
    payload: Mapping[str, Any] = field(default_factory=dict)
    """A call's `args` or a function response's `response`."""
    thought: bool = False
    signature: str | None = None


@dataclass(frozen=True)
class WireContent:
    role: str
    parts: list[WirePart]

    def count(self, kind: str) -> int:
        return sum(1 for part in self.parts if part.kind == kind)

    @property
    def effective_role(self) -> str:
        """The role is optional on the wire; an unnamed content is the model's if it calls functions."""
        if self.role:
            return self.role
        return "model" if self.count("call") else "user"


@dataclass(frozen=True)
class ParsedRequest:
    contents: list[WireContent]
    system: WireContent | None
    tools: list[Tool]
    tool_paths: list[str]
    """Where each tool's declaration sits (`tools[0].function_declarations[1]`)."""
    tool_choice: str | None
    model: str | None
    raw: dict[str, Any]

    @property
    def system_texts(self) -> list[str]:
        return [part.text for part in self.system.parts if part.kind == "text"] if self.system else []


def read_request(body: bytes) -> ParsedRequest:
    """Layer 1: the body as typed wire contents, or the `Rejection` the real API sends."""
    data = _load(body)
    for key in data:
        if key not in _TOP_LEVEL_NAMES:
            raise _unknown_name(key, "", "Cannot find field.")
    contents = [_content(item, path) for path, item in _repeated(data, "contents", "", "Content")]
    system = _message(data, "systemInstruction", "", "Content")
    declarations = _declarations(data)
    tool_choice = _tool_choice(data)
    _generation_config(data)
    model = _string(data, "model", "")
    return ParsedRequest(
        contents=contents,
        system=_content(system, "system_instruction") if system is not None else None,
        tools=[Tool(name, description, schema) for _, name, description, schema in declarations],
        tool_paths=[path for path, _, _, _ in declarations],
        tool_choice=tool_choice,
        model=model.removeprefix("models/") if model else None,
        raw=data,
    )


_FLOAT_MAX = 3.4028234663852886e38
"""The largest finite 32-bit float: `temperature` is a proto `float`, so anything larger cannot be stored."""


def _generation_config(data: Mapping[str, Any]) -> None:
    """`generationConfig.temperature`, the one sampling field a tool loop sets: a proto `float`, and
    (like every Gemini model) only from 0 to 2. A 4,000-digit number parses as infinity, which a
    `float` cannot hold, so it is refused rather than answered as if it were a temperature."""
    config = _message(data, "generationConfig", "", "GenerationConfig")
    if config is None:
        return
    _, value = _get(config, "temperature")
    if value is None:
        return
    path = "generation_config.temperature"
    number = _float(value)
    if number is None or not abs(number) <= _FLOAT_MAX:
        raise _invalid_value(path, "TYPE_FLOAT", value)
    if not 0 <= number < 2.0001:
        # [INF] Vertex AI's wording; its range clause is confirmed by a public capture of a 400 for
        # temperature 3.0 and -1.0 on gemini-3.7-flash (cuioss pr-agent-settings landing record, 2026).
        raise Rejection(
            f"Unable to submit request because it has a temperature value of {number:g} but the supported "
            "range is from 0 (inclusive) to 2.0001 (exclusive). Update the value and try again.",
            field=path,
        )


def _float(value: Any) -> float | None:
    """protobuf's JSON reading of a float field: a number, or a string holding one; never a bool."""
    if isinstance(value, bool):
        return None
    if not isinstance(value, (int, float, str)):
        return None
    try:
        return float(value)
    except (ValueError, OverflowError):  # not a number, or an integer past a double's range
        return None


def check_fields(parsed: ParsedRequest) -> None:
    """Layer 2: every `* GenerateContentRequest...` violation at once, one line each, like the real API."""
    lines: list[tuple[str, int | None]] = []
    if not parsed.contents:
        lines.append(("contents: contents is not specified", None))
    for index, content in enumerate(parsed.contents):
        path = f"contents[{index}]"
        if not content.parts:
            lines.append((f"{path}.parts: contents.parts must not be empty.", index))
        lines.extend((line, index) for line in _part_violations(content, path))
    if parsed.system is not None:
        lines.extend((line, None) for line in _part_violations(parsed.system, "system_instruction"))
    for path, tool in zip(parsed.tool_paths, parsed.tools, strict=True):
        if not _FUNCTION_NAME.fullmatch(tool.name):
            lines.append((f"{path}.name: {_BAD_FUNCTION_NAME}", None))
    if lines:
        message = "".join(f"* GenerateContentRequest.{line}\n" for line, _ in lines)
        raise Rejection(message, content=lines[0][1])


def merge_model_runs(contents: list[WireContent]) -> tuple[list[WireContent], list[int]]:
    """Adjacent `model` contents as the one model turn the API reads them as, and for each turn the
    index of its first content.

    google-genai's automatic function calling, streaming, appends every streamed chunk as a content of
    its own (`contents.extend(model_output)` in `models.py` `generate_content_stream`, python-genai 3.6;
    the JS SDK does the same), so its next request holds a run of `model` contents ending in the
    `functionCall` one: the official SDKs' own loop works only because the API takes a run of model
    contents as one turn. Adjacent `user` contents stay apart: the function responses must sit in the
    one content right after the calls (a separate content per response gets the G3 error,
    agentjido/req_llm#525), while plain text after them is accepted (langchain-ai/langchainjs#11477,
    checked against the live API)."""
    merged: list[WireContent] = []
    starts: list[int] = []
    for index, content in enumerate(contents):
        if merged and content.effective_role == "model" and merged[-1].effective_role == "model":
            merged[-1] = WireContent("model", [*merged[-1].parts, *content.parts])
            continue
        merged.append(content)
        starts.append(index)
    return merged, starts


def check_order(contents: list[WireContent]) -> None:
    """Layer 3: reference B.6's walk over `contents`; the first violation wins."""
    for index, content in enumerate(contents):
        if content.role not in ("user", "model", ""):
            raise Rejection(ROLE, content=index)
        calls, responses = content.count("call"), content.count("response")
        previous = contents[index - 1] if index else None
        expected = previous.count("call") if previous is not None else 0
        if calls and responses:
            raise Rejection(MIXED, Rule.RESULT_WITHOUT_TURN, content=index)
        if calls and (previous is None or previous.effective_role != "user"):
            # Two call turns in a row leave the first one's calls unanswered; a history that starts
            # with a call turn is an ordering the rule kinds have no better name for.
            raise Rejection(G1, Rule.MISSING_RESULT if expected else Rule.MALFORMED, content=index)
        if responses and not expected:
            raise Rejection(G2, Rule.RESULT_WITHOUT_TURN, content=index)
        if responses and responses != expected:
            rule = Rule.MISSING_RESULT if responses < expected else Rule.DUPLICATE_RESULT
            raise Rejection(G3, rule, content=index)
        if expected and not calls and not responses and content.effective_role == "user":
            # Reference rule 6 [INF]: a call turn answered by plain user text; most likely 0 != N.
            raise Rejection(G3, Rule.MISSING_RESULT, content=index)


# -- layer 1: JSON -------------------------------------------------------------------------------


def _load(body: bytes) -> dict[str, Any]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        # [INF] protobuf's JSON parser refuses bytes that are not UTF-8 ("Encountered non UTF-8 code
        # points."), as the other three providers refuse them with a 400; never silently replaced.
        shown = body.decode("utf-8", errors="replace")
        raise _json_failure(
            shown, len(body[: exc.start].decode("utf-8")), "Encountered non UTF-8 code points."
        ) from None
    if not text.strip():
        return {}  # [INF] an empty body converts to an empty message; "contents is not specified" follows
    problem: str | None
    try:
        data = json.loads(text, parse_constant=_reject_constant, parse_int=_integer)
    except json.JSONDecodeError as exc:
        raise _json_failure(text, exc.pos, _JSON_MESSAGES.get(exc.msg, "Unexpected token.")) from None
    except _BareConstant:
        raise _json_failure(text, _constant_position(text), "Unexpected token.") from None
    except RecursionError:
        data, problem = None, "deep"  # deeper than Python's parser goes, so deeper than protobuf's limit
    else:
        problem = _tree_problem(data)
    if problem == "deep":
        # [INF] protobuf stops at 100 levels; its exact text names the key, which we do not track.
        raise Rejection(f"{_INVALID_JSON} Message too deep. Max recursion depth reached.", field="")
    if problem == "surrogate":
        # [INF] an escaped surrogate with no partner is not Unicode; protobuf refuses it while parsing.
        match = re.search(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}", text)
        raise _json_failure(text, match.start() if match else 0, "Unexpected token.")
    if not isinstance(data, dict):
        raise _unknown_name("", "", "Root element must be a message.")
    return data


# Python's decoder messages -> protobuf JsonStreamParser's [INF: mapped by meaning].
_JSON_MESSAGES = {
    "Extra data": "Parsing terminated before end of input.",
    "Expecting ':' delimiter": "Expected : between key:value pair.",
    "Expecting property name enclosed in double quotes": "Expected an object key or }.",
    "Unterminated string starting at": "Closing quote expected in string.",
}


def _integer(digits: str) -> int | float:
    """Python refuses to convert integers over 4300 digits; protobuf reads any number as a double."""
    return int(digits) if len(digits) <= 4000 else float(digits)


class _BareConstant(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _BareConstant(name)  # NaN and Infinity are not JSON, and Google refuses them


def _constant_position(text: str) -> int:
    """Where the first bare NaN/Infinity starts, outside any string."""
    in_string = escaped = False
    for index, char in enumerate(text):
        if escaped:
            escaped = False
        elif in_string:
            escaped = char == "\\"
            in_string = char != '"'
        elif char == '"':
            in_string = True
        elif text.startswith(("NaN", "Infinity", "-Infinity"), index):
            return index
    return len(text)


def _json_failure(text: str, position: int, message: str) -> Rejection:
    """protobuf's ReportFailure: the message, 20 characters either side, and a caret under the spot."""
    if not text[position:].strip():
        position = len(text)
        message = "Unexpected end of string. Expected a value." if message == "Unexpected token." else message
    begin = max(position - 20, 0)
    segment = text[begin : position + 20]
    caret = " " * (position - begin) + "^"
    return Rejection(f"{_INVALID_JSON} {message}\n{segment}\n{caret}", field="")


def _tree_problem(data: Any) -> str | None:
    """`deep` past protobuf's nesting limit, `surrogate` for a string that is not valid Unicode."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return "surrogate"
        elif isinstance(value, (dict, list)):
            if depth > _MAX_DEPTH:
                return "deep"
            items = [*value, *value.values()] if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")


# -- layer 1: proto3-JSON conversion ---------------------------------------------------------------


def _get(obj: Mapping[str, Any], name: str) -> tuple[str, Any]:
    """The value under the lowerCamel or snake_case spelling, and the key used; JSON null is unset."""
    for key in (name, _snake(name)):
        if obj.get(key) is not None:
            return key, obj[key]
    return name, None


def _join(parent: str, name: str) -> str:
    return f"{parent}.{_snake(name)}" if parent else _snake(name)


def _render(value: Any) -> str:
    """protobuf's DataPiece::ValueAsStringOrDefault: strings quoted, numbers bare."""
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)  # [INF] objects/lists


def _invalid_value(path: str, type_name: str, value: Any, detail: str | None = None) -> Rejection:
    shown = detail if detail is not None else _render(value)
    return Rejection(f"Invalid value at '{path}' ({type_name}), {shown}", field=path)


def _unknown_name(name: str, location: str, reason: str) -> Rejection:
    at = f" at '{location}'" if location else ""
    return Rejection(f'{_INVALID_JSON} Unknown name "{name}"{at}: {reason}', field=location)


def _message(obj: Mapping[str, Any], name: str, parent: str, type_name: str) -> dict[str, Any] | None:
    key, value = _get(obj, name)
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, list):
        raise _unknown_name(key, parent, "Proto field is not repeating, cannot start list.")
    raise _invalid_value(_join(parent, name), _TYPE + type_name, value)


def _repeated(obj: Mapping[str, Any], name: str, parent: str, type_name: str) -> list[tuple[str, dict[str, Any]]]:
    """(path, item) for a repeated message field. Like Google's converter, a single object counts as
    a one-item list, and a null item as an empty message."""
    _, value = _get(obj, name)
    path = _join(parent, name)
    if value is None:
        return []
    if isinstance(value, dict):
        return [(path, value)]
    if not isinstance(value, list):
        raise _invalid_value(path, _TYPE + type_name, value)
    items: list[tuple[str, dict[str, Any]]] = []
    for index, item in enumerate(value):
        item_path = f"{path}[{index}]"
        if item is not None and not isinstance(item, dict):
            raise _invalid_value(item_path, _TYPE + type_name, item)
        items.append((item_path, item or {}))
    return items


def _string(obj: Mapping[str, Any], name: str, parent: str) -> str | None:
    key, value = _get(obj, name)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        raise _unknown_name(key, parent, "Proto field is not repeating, cannot start list.")
    raise _invalid_value(_join(parent, name), "TYPE_STRING", value)


def _strings(obj: Mapping[str, Any], name: str, parent: str) -> list[str]:
    _, value = _get(obj, name)
    values = value if isinstance(value, list) else [] if value is None else [value]
    for index, item in enumerate(values):
        if not isinstance(item, str):
            raise _invalid_value(f"{_join(parent, name)}[{index}]", "TYPE_STRING", item)
    return values


def _bool(obj: Mapping[str, Any], name: str, parent: str) -> bool:
    _, value = _get(obj, name)
    if value is None or isinstance(value, bool):
        return bool(value)
    if value in ("true", "false"):  # protobuf parses these strings as booleans
        return bool(value == "true")
    raise _invalid_value(_join(parent, name), "TYPE_BOOL", value)


def _bytes(obj: Mapping[str, Any], name: str, parent: str) -> str | None:
    _, value = _get(obj, name)
    if value is None:
        return None
    path = _join(parent, name)
    if not isinstance(value, str):
        raise _invalid_value(path, "TYPE_BYTES", value)
    standard = value.replace("-", "+").replace("_", "/")  # Google accepts both base64 alphabets
    try:
        base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise _invalid_value(path, "TYPE_BYTES", value, f'Base64 decoding failed for "{value}"') from None
    return value


def _struct(obj: Mapping[str, Any], name: str, parent: str) -> dict[str, Any]:
    _, value = _get(obj, name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _invalid_value(_join(parent, name), _STRUCT, value)
    return value


def _content(obj: Mapping[str, Any], path: str) -> WireContent:
    role = _string(obj, "role", path) or ""
    return WireContent(role, [_part(item, item_path) for item_path, item in _repeated(obj, "parts", path, "Part")])


def _part(obj: Mapping[str, Any], path: str) -> WirePart:
    data = [key for key, value in obj.items() if key in _DATA_NAMES and value is not None]
    if len(data) > 1:
        raise _invalid_value(path, "oneof", None, f"oneof field 'data' is already set. Cannot set '{data[1]}'")
    thought = _bool(obj, "thought", path)
    signature = _bytes(obj, "thoughtSignature", path)
    text = _string(obj, "text", path)
    call = _message(obj, "functionCall", path, "FunctionCall")
    response = _message(obj, "functionResponse", path, "FunctionResponse")
    if call is not None:
        where = _join(path, "functionCall")
        _string(call, "id", where)
        return WirePart(
            "call", name=_string(call, "name", where) or "", payload=_struct(call, "args", where),
            thought=thought, signature=signature,
        )  # fmt: skip
    if response is not None:
        where = _join(path, "functionResponse")
        _string(response, "id", where)
        name = _string(response, "name", where) or ""
        return WirePart("response", name=name, payload=_struct(response, "response", where))
    if text:
        return WirePart("text", text=text, thought=thought, signature=signature)
    # An empty string leaves the oneof unset, exactly like a missing field (real 400s show this).
    return WirePart("other" if data and text is None else "empty")


def _declarations(data: Mapping[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(path, name, description, JSON Schema) for every function declaration, in order."""
    found = []
    for tool_path, tool in _repeated(data, "tools", "", "Tool"):
        for path, declaration in _repeated(tool, "functionDeclarations", tool_path, "FunctionDeclaration"):
            name = _string(declaration, "name", path) or ""
            description = _string(declaration, "description", path) or ""
            schema = _message(declaration, "parameters", path, "Schema")
            _, json_schema = _get(declaration, "parametersJsonSchema")
            if isinstance(json_schema, dict):
                schema = json_schema
            elif schema is not None:
                schema = _lower_types(schema)
            found.append((path, name, description, schema or {"type": "object", "properties": {}}))
    return found


def _lower_types(schema: Any) -> Any:
    """Gemini's Schema spells types in capitals (OBJECT, STRING); JSON Schema does not."""
    if isinstance(schema, dict):
        return {
            key: value.lower() if key == "type" and isinstance(value, str) else _lower_types(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [_lower_types(item) for item in schema]
    return schema


def _tool_choice(data: Mapping[str, Any]) -> str | None:
    """`toolConfig.functionCallingConfig` as the neutral tool_choice."""
    config = _message(data, "toolConfig", "", "ToolConfig")
    if config is None:
        return None
    where = _join("", "toolConfig")
    calling = _message(config, "functionCallingConfig", where, "FunctionCallingConfig") or {}
    where = _join(where, "functionCallingConfig")
    mode = _enum(calling, "mode", where, "FunctionCallingConfig.Mode", _MODES)
    allowed = _strings(calling, "allowedFunctionNames", where)
    if mode == "NONE":
        return "none"
    if mode == "ANY":
        return allowed[0] if len(allowed) == 1 else "required"
    return "auto"  # AUTO, unspecified, and VALIDATED (calls or prose, like auto)


def _enum(obj: Mapping[str, Any], name: str, parent: str, type_name: str, names: tuple[str, ...]) -> str:
    _, value = _get(obj, name)
    if value is None:
        return names[0]
    if isinstance(value, str) and value.upper() in names:  # protobuf parses enum names case-insensitively
        return value.upper()
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    raise _invalid_value(_join(parent, name), _TYPE + type_name, value)


# -- layer 2: field validation helpers ---------------------------------------------------------------


def _part_violations(content: WireContent, path: str) -> list[str]:
    lines = []
    for index, part in enumerate(content.parts):
        where = f"{path}.parts[{index}]"
        if part.kind == "empty":
            lines.append(f"{where}.data: required oneof field 'data' must have one initialized field")
        elif part.kind in ("call", "response") and not part.name:
            # Verbatim for function_response; function_call by analogy [INF].
            kind = "function_call" if part.kind == "call" else "function_response"
            lines.append(f"{where}.{kind}.name: Name cannot be empty.")
    return lines
