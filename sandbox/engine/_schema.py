"""The part of JSON Schema that structured output allows, checked: enough to tell a scripted answer
from the shape a request asks for, and to name the field that differs.

Read: `type` (a name or a list; Gemini's upper-case names too), `properties`, `required`, `items`,
`enum`, `const`, `additionalProperties`, `anyOf`/`oneOf`, `nullable` (Gemini's), and `$ref` to the
schema's own `$defs`/`definitions` (what pydantic writes for nested models). Other keywords (formats,
bounds, descriptions) are not checked: the providers' structured output does not enforce most of them.

May touch: the schema and value it is handed; it keeps no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["mismatch"]

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (type(None),),
}
_DEPTH = 64
"""How deep `$ref`s and nesting are followed: a schema that refers to itself ends here."""


def mismatch(value: Any, schema: Any) -> str | None:
    """Where `value` leaves `schema`, as `output.field: what differs`; None when it fits."""
    return _check(value, schema, "output", schema, 0)


def _check(value: Any, schema: Any, where: str, root: Any, depth: int) -> str | None:
    if not isinstance(schema, Mapping) or depth > _DEPTH:
        return None  # `true`, `{}` or an unreadable schema: anything fits
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _resolve(root, ref)
        return _check(value, target, where, root, depth + 1) if target is not None else None
    if value is None and schema.get("nullable") is True:
        return None
    for keyword in ("anyOf", "oneOf"):
        options = schema.get(keyword)
        if isinstance(options, list) and options:
            problems = [_check(value, option, where, root, depth + 1) for option in options]
            if all(problem is not None for problem in problems):
                return f"{where}: {_shown(value)} fits none of its {keyword} options ({'; '.join(map(str, problems))})"
    if "const" in schema and not _same(value, schema["const"]):
        return f"{where}: {_shown(value)}, but the schema wants {_shown(schema['const'])}"
    enum = schema.get("enum")
    if isinstance(enum, list) and not any(_same(value, option) for option in enum):
        return f"{where}: {_shown(value)} is not one of {_shown(enum)}"
    problem = _check_type(value, schema.get("type"), where)
    if problem is not None:
        return problem
    if isinstance(value, dict):
        return _check_object(value, schema, where, root, depth)
    if isinstance(value, list):
        items = schema.get("items")
        for index, item in enumerate(value):
            problem = _check(item, items, f"{where}[{index}]", root, depth + 1)
            if problem is not None:
                return problem
    return None


def _check_type(value: Any, wanted: Any, where: str) -> str | None:
    names = wanted if isinstance(wanted, list) else [wanted] if isinstance(wanted, str) else []
    if not names:
        return None
    lowered = [name.lower() for name in names if isinstance(name, str)]
    for name in lowered:
        kinds = _TYPES.get(name)
        if kinds is None:
            return None  # a type this checker does not know: not judged
        if isinstance(value, bool) and name not in ("boolean",):
            continue  # JSON's true is no number
        if isinstance(value, float) and name == "integer" and value.is_integer():
            return None
        if isinstance(value, kinds):
            return None
    return f"{where}: {_shown(value)} is not of type {' or '.join(lowered)}"


def _check_object(value: dict[str, Any], schema: Mapping[str, Any], where: str, root: Any, depth: int) -> str | None:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    for name in required if isinstance(required, list) else ():
        if isinstance(name, str) and name not in value:
            return f"{where}.{name} is required by the schema and missing"
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            problem = _check(item, properties[name], f"{where}.{name}", root, depth + 1)
        elif extra is False:
            known = ", ".join(properties) or "none"
            return f"{where}.{name} is not a property the schema allows (additionalProperties is false; it has {known})"
        else:
            problem = _check(item, extra, f"{where}.{name}", root, depth + 1)
        if problem is not None:
            return problem
    return None


def _resolve(root: Any, ref: str) -> Any:
    """The schema a local `$ref` (`#/$defs/Name`, `#/definitions/Name`, `#`) names; None otherwise."""
    if not ref.startswith("#"):
        return None
    target = root
    for part in ref[1:].split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, Mapping) or part not in target:
            return None
        target = target[part]
    return target


def _same(value: Any, other: Any) -> bool:
    """JSON equality: `true` is not `1`."""
    return (
        type(value) is type(other) and value == other
        if isinstance(value, bool) or isinstance(other, bool)
        else value == other
    )


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
