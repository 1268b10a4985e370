"""Layer 1 of a Gemini request's checks, its first half: the body as JSON text (`Invalid JSON payload
received. ...` with protobuf's caret under the spot, nesting past its limit, lone surrogates); the
decoded object's conversion to the proto message follows in `_proto`. Texts follow protobuf's
`JsonStreamParser`. Touches only the request bytes; raises nothing but `Rejection`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .._json import decode
from ._body import Rejection
from ._proto import INVALID_JSON, unknown_name

__all__ = ["load_json", "tree_problem"]

_MAX_DEPTH = 100  # protobuf's JsonStreamParser default recursion limit


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
        problem = tree_problem(text, data)
    if problem == "deep":
        # [INF] protobuf stops at 100 levels; its exact text names the key, which we do not track.
        raise Rejection(f"{INVALID_JSON} Message too deep. Max recursion depth reached.", field="")
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
    return Rejection(f"{INVALID_JSON} {message}\n{segment}\n{caret}", field="")


def tree_problem(text: str, data: Any) -> str | None:
    """`deep` past protobuf's nesting limit or `surrogate` for a string that is not valid Unicode, in
    the decoded JSON `data` of `text`, whichever a walk of every node meets first. A lone surrogate can
    only come from a `\\uD800`-`\\uDFFF` escape (the text was strict UTF-8), and nesting past the limit
    needs more than that many `{` and `[`: a body with neither has no problem to look for."""
    if _SURROGATE_ESCAPE.search(text) is not None or text.count("{") + text.count("[") > _MAX_DEPTH:
        return _tree_problem(data)
    return None


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
