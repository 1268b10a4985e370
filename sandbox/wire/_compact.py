"""Compact JSON of values decoded from a request, written by orjson where its text is `json`'s: kept
state stores each request's items as their JSON (`sandbox.engine.kept`), and a Responses answer keys its
echo of the request's fields by their JSON (`openai_responses._encode`). `json`'s encoder costs a
Responses request eight times what orjson's does (45k instructions against 6k for the serve rows'
`input`). Touches nothing but the values it is handed.

Where orjson's text is not `json`'s, `json` writes it: a float (orjson writes `1e-05` as `0.00001`,
`1e+16` as `1e16`), NaN and Infinity (orjson writes `null`; `json.loads` reads `1e999` as Infinity),
an integer past 64 bits, a lone surrogate, a non-string key, a subclass of a JSON type (orjson
refuses those, so they go to `json` too). What orjson would write for a type `json` refuses (an
enum, a UUID) it writes; such values are never decoded from JSON, and the callers hand only
decoded values and the fake's own trees of plain types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._sse import dumps

__all__ = ["compact_bytes", "compact_key"]

_orjson_dumps: Callable[..., bytes] | None
try:  # pragma: no cover - which branch runs depends on what is installed
    from orjson import OPT_PASSTHROUGH_DATACLASS, OPT_PASSTHROUGH_DATETIME, OPT_PASSTHROUGH_SUBCLASS
    from orjson import dumps as _orjson_dumps

    _PLAIN = OPT_PASSTHROUGH_DATACLASS | OPT_PASSTHROUGH_DATETIME | OPT_PASSTHROUGH_SUBCLASS
    """orjson refuses what `json` would write otherwise (a `str` or `int` subclass, a dataclass)."""
except ImportError:  # pragma: no cover
    _orjson_dumps, _PLAIN = None, 0

_FLOATS = bytes.maketrans(b",[en", b"::..")
"""A value follows a `:`, a `,` or a `[`, and orjson writes every float with a `.` or an `e` (its digits
and sign deleted: `:-1.5e-07` reads `:...`), and `null` (which may have been a NaN or an Infinity)
with an `n`: so where orjson's text may not be `json`'s, its text so translated holds `:.`. Text in
a string that reads so (`"yes,no"`) only sends the value to `json`, which writes the same text; a
hex id's `8e` never follows one of the three."""
_SIGNED = b"-0123456789"
_WHOLE = b'[{"tf'
"""What orjson's text starts with where that text is a container, a string or a boolean: a number or a
null alone has no `:` before it to find."""


def compact_bytes(data: Any) -> bytes:
    """`dumps(data)` as UTF-8, a lone surrogate kept as its own bytes (`surrogatepass`), as kept state
    stores it."""
    text = _orjson(data)
    if text is not None and text[0] in _WHOLE and b":." not in text.translate(_FLOATS, _SIGNED):
        return text
    return dumps(data).encode("utf-8", "surrogatepass")


def compact_key(data: Any) -> bytes:
    """A key equal for two values exactly when `dumps` writes the same text for them (`1`, `1.0` and
    `true` apart): orjson's text, whose floats are exact too though written otherwise, or `json`'s
    where orjson may have written a NaN or an Infinity as `null` (any `null` in its text). Either text
    reads back as the value it was written for, so one value's text never equals another's, whichever
    encoder wrote each."""
    text = _orjson(data)
    if text is not None and b"null" not in text:
        return text
    return dumps(data).encode("utf-8", "surrogatepass")


def _orjson(data: Any) -> bytes | None:
    """orjson's text of `data`; None where it refuses it, or is not installed."""
    if _orjson_dumps is None:
        return None
    try:
        return _orjson_dumps(data, option=_PLAIN)
    except TypeError:
        return None
