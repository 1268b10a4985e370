"""A scenario's layout written as TOML in the catalogue's own form, for a person to edit.

Top-level strings first, then `[[tools]]`, `[[steps]]` and `[[faults]]` with their values inline (a
tool's parameters and a step's calls on one line each, as `sandbox/engine/scenarios/*.toml` writes
them), then `[tool_outputs]`. Strings are TOML basic strings, escaped as JSON escapes them (every
JSON string escape is a TOML one). TOML has no null: a JSON null inside a value is left out, and the
file's first comments say so. Touches nothing but its argument.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["render"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_TABLES = ("tools", "steps", "faults")


def render(layout: Mapping[str, Any]) -> str:
    """`layout`: `#` (comment lines), scalars, the array-of-tables keys and `tool_outputs`."""
    dropped: list[str] = []
    lines = [f"# {line}" for line in layout.get("#", ())]
    for key, value in layout.items():
        if key in ("#", "tool_outputs", *_TABLES) or value in ("", False, None):
            continue
        lines.append(f"{_key(key)} = {_value(value, dropped)}")
    for table in _TABLES:
        for entry in layout.get(table, ()):
            lines += ["", f"[[{table}]]"]
            lines += [f"{_key(key)} = {_value(value, dropped)}" for key, value in entry.items() if value is not None]
    outputs = layout.get("tool_outputs") or {}
    if outputs:
        lines += ["", "[tool_outputs]"]
        lines += [f"{_key(key)} = {_value(value, dropped)}" for key, value in outputs.items()]
    if dropped:
        note = f"# TOML has no null: left out {', '.join(sorted(set(dropped)))} where a value was null."
        lines.insert(len(layout.get("#", ())), note)
    return "\n".join(lines) + "\n"


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def _string(text: str) -> str:
    # JSON's escapes are TOML's; DEL is a control character TOML wants escaped and JSON does not.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(value: Any, dropped: list[str], name: str = "") -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Mapping):
        items = []
        for key, item in value.items():
            if item is None:
                dropped.append(str(key))
                continue
            items.append(f"{_key(str(key))} = {_value(item, dropped, str(key))}")
        return "{ " + ", ".join(items) + " }" if items else "{}"
    if isinstance(value, (list, tuple)):
        kept = [item for item in value if item is not None]
        if len(kept) != len(value):
            dropped.append(name or "an array item")
        return "[" + ", ".join(_value(item, dropped) for item in kept) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")
