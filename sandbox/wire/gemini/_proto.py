"""Layer 1 of a Gemini request's checks, its second half: the decoded JSON's conversion to the proto
message (`Invalid value at ...`, `Invalid JSON payload received. Unknown name ...`); the first
problem wins. Texts follow protobuf's `ProtoWriter`. The JSON text itself is read first, in
`_jsontext`. Touches only the decoded request; raises nothing but `Rejection`.
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

from ._body import Rejection, WireContent, WirePart

__all__ = [
    "INVALID_JSON",
    "TOP_LEVEL_NAMES",
    "get_field",
    "invalid_value",
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
INVALID_JSON = "Invalid JSON payload received."

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
    return Rejection(f'{INVALID_JSON} Unknown name "{name}"{at}: {reason}', field=location)


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
    plain = _plain_part(obj) if len(obj) == 1 else None
    if plain is not None:
        return plain
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


def _plain_part(obj: Mapping[str, Any]) -> WirePart | None:
    """The three shapes nearly every part has (`{"text": "..."}`, `{"functionCall": {"name", "args"}}`,
    `{"functionResponse": {"name", "response"}}`), read without the field-by-field checks they pass
    anyway; None for anything else, which `_part` checks in full."""
    ((key, value),) = obj.items()
    if key == "text":
        return WirePart("text", text=value) if type(value) is str and value else None
    if (key == "functionCall" or key == "functionResponse") and type(value) is dict and len(value) == 2:
        call = key == "functionCall"
        name, payload = value.get("name"), value.get("args" if call else "response")
        if type(name) is str and type(payload) is dict:
            return WirePart("call" if call else "response", name=name, payload=payload)
    return None


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
