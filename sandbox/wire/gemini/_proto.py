"""Layer 1 of a Gemini request's checks: the JSON, then its conversion to the proto message
(`Invalid JSON payload received. ...`, `Invalid value at ...`); the first problem wins. Texts follow
protobuf's `JsonStreamParser` / `ProtoWriter`. Touches only the request bytes; raises nothing but
`Rejection`.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from .._json import decode
from ._body import Rejection, WireContent, WirePart

__all__ = [
    "TOP_LEVEL_NAMES",
    "get_field",
    "invalid_value",
    "load_json",
    "read_content",
    "read_declarations",
    "read_message",
    "read_repeated",
    "read_string",
    "read_tool_choice",
    "unknown_name",
]

_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1beta."
_STRUCT = "type.googleapis.com/google.protobuf.Struct"
_INVALID_JSON = "Invalid JSON payload received."
_MAX_DEPTH = 100  # protobuf's JsonStreamParser default recursion limit

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


TOP_LEVEL_NAMES = _TOP_LEVEL | {_snake(name) for name in _TOP_LEVEL}
_DATA_NAMES = _DATA | {_snake(name) for name in _DATA}


# -- layer 1: JSON -------------------------------------------------------------------------------


def load_json(body: bytes) -> dict[str, Any]:
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
        data = decode(text, _DECODER)
    except json.JSONDecodeError as exc:
        raise _json_failure(text, exc.pos, _JSON_MESSAGES.get(exc.msg, "Unexpected token.")) from None
    except _BareConstant:
        raise _json_failure(text, _constant_position(text), "Unexpected token.") from None
    except RecursionError:
        data, problem = None, "deep"  # deeper than Python's parser goes, so deeper than protobuf's limit
    else:
        problem = _tree_problem(data) if _may_have_problem(text) else None
    if problem == "deep":
        # [INF] protobuf stops at 100 levels; its exact text names the key, which we do not track.
        raise Rejection(f"{_INVALID_JSON} Message too deep. Max recursion depth reached.", field="")
    if problem == "surrogate":
        # [INF] an escaped surrogate with no partner is not Unicode; protobuf refuses it while parsing.
        match = re.search(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}", text)
        raise _json_failure(text, match.start() if match else 0, "Unexpected token.")
    if not isinstance(data, dict):
        raise unknown_name("", "", "Root element must be a message.")
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


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_integer)


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


def _may_have_problem(text: str) -> bool:
    """Whether the walk of `_tree_problem` can find anything in the JSON `text`: a lone surrogate can
    only come from a `\\uD800`-`\\uDFFF` escape (the text was strict UTF-8), and nesting past the limit
    needs more than that many `{` and `[`. Most bodies have neither, and skip a walk of every node."""
    return text.count("{") + text.count("[") > _MAX_DEPTH or _SURROGATE_ESCAPE.search(text) is not None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


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


def get_field(obj: Mapping[str, Any], name: str) -> tuple[str, Any]:
    """The value under the lowerCamel or snake_case spelling, and the key used; JSON null is unset."""
    value = obj.get(name)
    if value is not None:
        return name, value
    snake = _snake(name)
    value = obj.get(snake)
    if value is not None:
        return snake, value
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


def invalid_value(path: str, type_name: str, value: Any, detail: str | None = None) -> Rejection:
    shown = detail if detail is not None else _render(value)
    return Rejection(f"Invalid value at '{path}' ({type_name}), {shown}", field=path)


def unknown_name(name: str, location: str, reason: str) -> Rejection:
    at = f" at '{location}'" if location else ""
    return Rejection(f'{_INVALID_JSON} Unknown name "{name}"{at}: {reason}', field=location)


def read_message(obj: Mapping[str, Any], name: str, parent: str, type_name: str) -> dict[str, Any] | None:
    key, value = get_field(obj, name)
    if value is None or isinstance(value, dict):
        return value
    if isinstance(value, list):
        raise unknown_name(key, parent, "Proto field is not repeating, cannot start list.")
    raise invalid_value(_join(parent, name), _TYPE + type_name, value)


def read_repeated(obj: Mapping[str, Any], name: str, parent: str, type_name: str) -> list[tuple[str, dict[str, Any]]]:
    """(path, item) for a repeated message field. Like Google's converter, a single object counts as
    a one-item list, and a null item as an empty message."""
    _, value = get_field(obj, name)
    path = _join(parent, name)
    if value is None:
        return []
    if isinstance(value, dict):
        return [(path, value)]
    if not isinstance(value, list):
        raise invalid_value(path, _TYPE + type_name, value)
    items: list[tuple[str, dict[str, Any]]] = []
    for index, item in enumerate(value):
        item_path = f"{path}[{index}]"
        if item is not None and not isinstance(item, dict):
            raise invalid_value(item_path, _TYPE + type_name, item)
        items.append((item_path, item or {}))
    return items


def read_string(obj: Mapping[str, Any], name: str, parent: str) -> str | None:
    key, value = get_field(obj, name)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        raise unknown_name(key, parent, "Proto field is not repeating, cannot start list.")
    raise invalid_value(_join(parent, name), "TYPE_STRING", value)


def _strings(obj: Mapping[str, Any], name: str, parent: str) -> list[str]:
    _, value = get_field(obj, name)
    values = value if isinstance(value, list) else [] if value is None else [value]
    for index, item in enumerate(values):
        if not isinstance(item, str):
            raise invalid_value(f"{_join(parent, name)}[{index}]", "TYPE_STRING", item)
    return values


def _bool(obj: Mapping[str, Any], name: str, parent: str) -> bool:
    _, value = get_field(obj, name)
    if value is None or isinstance(value, bool):
        return bool(value)
    if value in ("true", "false"):  # protobuf parses these strings as booleans
        return bool(value == "true")
    raise invalid_value(_join(parent, name), "TYPE_BOOL", value)


def _bytes(obj: Mapping[str, Any], name: str, parent: str) -> str | None:
    _, value = get_field(obj, name)
    if value is None:
        return None
    path = _join(parent, name)
    if not isinstance(value, str):
        raise invalid_value(path, "TYPE_BYTES", value)
    standard = value.replace("-", "+").replace("_", "/")  # Google accepts both base64 alphabets
    try:
        base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise invalid_value(path, "TYPE_BYTES", value, f'Base64 decoding failed for "{value}"') from None
    return value


def _struct(obj: Mapping[str, Any], name: str, parent: str) -> dict[str, Any]:
    _, value = get_field(obj, name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid_value(_join(parent, name), _STRUCT, value)
    return value


def read_content(obj: Mapping[str, Any], path: str) -> WireContent:
    role = read_string(obj, "role", path) or ""
    return WireContent(role, [_part(item, item_path) for item_path, item in read_repeated(obj, "parts", path, "Part")])


def _part(obj: Mapping[str, Any], path: str) -> WirePart:
    data = [key for key, value in obj.items() if key in _DATA_NAMES and value is not None]
    if len(data) > 1:
        raise invalid_value(path, "oneof", None, f"oneof field 'data' is already set. Cannot set '{data[1]}'")
    thought = _bool(obj, "thought", path)
    signature = _bytes(obj, "thoughtSignature", path)
    text = read_string(obj, "text", path)
    call = read_message(obj, "functionCall", path, "FunctionCall")
    response = read_message(obj, "functionResponse", path, "FunctionResponse")
    if call is not None:
        where = _join(path, "functionCall")
        read_string(call, "id", where)
        return WirePart(
            "call", name=read_string(call, "name", where) or "", payload=_struct(call, "args", where),
            thought=thought, signature=signature,
        )  # fmt: skip
    if response is not None:
        where = _join(path, "functionResponse")
        read_string(response, "id", where)
        name = read_string(response, "name", where) or ""
        return WirePart("response", name=name, payload=_struct(response, "response", where))
    if text:
        return WirePart("text", text=text, thought=thought, signature=signature)
    # An empty string leaves the oneof unset, exactly like a missing field (real 400s show this).
    return WirePart("other" if data and text is None else "empty")


def read_declarations(data: Mapping[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(path, name, description, JSON Schema) for every function declaration, in order."""
    found = []
    for tool_path, tool in read_repeated(data, "tools", "", "Tool"):
        for path, declaration in read_repeated(tool, "functionDeclarations", tool_path, "FunctionDeclaration"):
            name = read_string(declaration, "name", path) or ""
            description = read_string(declaration, "description", path) or ""
            schema = read_message(declaration, "parameters", path, "Schema")
            _, json_schema = get_field(declaration, "parametersJsonSchema")
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


def read_tool_choice(data: Mapping[str, Any]) -> str | None:
    """`toolConfig.functionCallingConfig` as the neutral tool_choice."""
    config = read_message(data, "toolConfig", "", "ToolConfig")
    if config is None:
        return None
    where = _join("", "toolConfig")
    calling = read_message(config, "functionCallingConfig", where, "FunctionCallingConfig") or {}
    where = _join(where, "functionCallingConfig")
    mode = _enum(calling, "mode", where, "FunctionCallingConfig.Mode", _MODES)
    allowed = _strings(calling, "allowedFunctionNames", where)
    if mode == "NONE":
        return "none"
    if mode == "ANY":
        return allowed[0] if len(allowed) == 1 else "required"
    return "auto"  # AUTO, unspecified, and VALIDATED (calls or prose, like auto)


def _enum(obj: Mapping[str, Any], name: str, parent: str, type_name: str, names: tuple[str, ...]) -> str:
    _, value = get_field(obj, name)
    if value is None:
        return names[0]
    if isinstance(value, str) and value.upper() in names:  # protobuf parses enum names case-insensitively
        return value.upper()
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    raise invalid_value(_join(parent, name), _TYPE + type_name, value)
