"""Reading a request's JSON with a decoder made once: what `json.loads(body, parse_constant=...)`
does, without building a new decoder and scanner on every call (`json.loads` only reuses its own
decoder when called with no options), and with a nesting limit that does not depend on the caller.
Touches nothing but the text it is handed.

Where `orjson` is installed (a dependency of the package, where it installs), a body is read by it
first. Only its values are taken, never its verdicts: whatever it refuses (`NaN`, a lone
surrogate, a number out of a double's range, a BOM, UTF-16) is read again by `json`, whose error the
wire formats translate into each provider's own, and a body holding a run of 19 digits or more
(where orjson reads an integer past 64 bits as a float) goes to `json` straight away. So the values
and errors are `json`'s, whichever reads the body (tests/wire/test_json.py compares the two).

Why the limit: Python's decoder recurses once per level and gives up with `RecursionError` when the
interpreter's stack runs out, so where it gives up depends on how deep the caller already is. The
same body could then be decoded on `sandbox serve`'s event loop and refused in its worker thread, or
in a test. Past `MAX_NESTING` levels a body is refused before decoding, the same way whichever door
or thread reads it; below it the decoder has room to spare on any stack the sandbox runs on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from itertools import accumulate
from typing import Any

_orjson_loads: Callable[[bytes], Any] | None
try:  # pragma: no cover - which branch runs depends on what is installed
    from orjson import loads as _orjson_loads
except ImportError:  # pragma: no cover
    _orjson_loads = None

__all__ = ["MAX_NESTING", "decode", "loads", "orjson_read"]

MAX_NESTING = 512
"""Arrays and objects inside one another in one request. [INF] A sandbox limit, not a provider's
(none documents one): a tool schema nests tens of levels, and Python's own decoder, which gave up
near 1,000 levels less the caller's depth, was the limit before."""

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def decode(data: bytes | bytearray | str, decoder: json.JSONDecoder) -> Any:
    """`json.loads(data, ...)` with `decoder`'s options: `json.loads`'s own steps (a BOM refused in text,
    bytes decoded in the encoding they announce), then `decoder.decode`; same values, same errors, and
    `RecursionError` for a body nested past `MAX_NESTING`, as each wire format's caller expects of it.

    `decoder` may set `parse_constant` (called only for `NaN` and `Infinity`, which orjson refuses)
    and a `parse_int` that agrees with `int` on every integer of fewer than 19 digits; other hooks
    would be skipped by the orjson reading, so they are not allowed."""
    if _orjson_loads is not None:
        raw = data if isinstance(data, bytes) else _utf8(data)
        read = None if raw is None else orjson_read(raw)
        if read is not None:
            return read[0]
    if isinstance(data, str):
        if data.startswith("\ufeff"):
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", data, 0)
    else:
        data = data.decode(json.detect_encoding(data), "surrogatepass")
    if data.count("[") + data.count("{") > MAX_NESTING and _nesting(data) > MAX_NESTING:
        raise RecursionError(f"the JSON nests deeper than {MAX_NESTING} levels")
    return decoder.decode(data)


def orjson_read(raw: bytes) -> tuple[Any] | None:
    """`raw`'s value (alone in a tuple) where orjson reads it as `json` would (see `decode`); None where
    only `json` may read it (its value or its error): orjson absent or refusing the body (not UTF-8, a
    BOM, NaN, a lone surrogate escape, bad JSON), a run of 19 digits, more openings than `MAX_NESTING`."""
    if _orjson_loads is None:  # pragma: no cover - orjson is installed wherever it installs
        return None
    shape = raw.translate(_SHAPE)
    if _LONG_NUMBER in shape or shape.count(b"[") > MAX_NESTING:
        return None
    try:
        return (_orjson_loads(raw),)
    except ValueError:
        return None


def _utf8(data: bytearray | str) -> bytes | None:
    """The UTF-8 of text orjson can read as it is: not text starting with a BOM (which `json` refuses
    in text and orjson would not see), nor holding a lone surrogate (which UTF-8 cannot hold)."""
    if isinstance(data, bytearray):
        return bytes(data)
    if data.startswith("\ufeff"):
        return None
    try:
        return data.encode("utf-8")
    except UnicodeEncodeError:
        return None


_SHAPE = bytes(48 if 48 <= byte <= 57 else 91 if byte in b"[{" else 32 for byte in range(256))
"""Every ASCII digit to `0`, both opening brackets to `[`, every other byte to a space: the translated
body tells how many arrays and objects it opens and whether it holds a run of digits."""
_LONG_NUMBER = b"0" * 19
"""19 digits in a row: an integer orjson might read past 64 bits, where it gives a float."""

_PLAIN = json.JSONDecoder()


def loads(data: bytes | bytearray | str) -> Any:
    """`json.loads(data)` with the nesting limit: for what a request carries (its body read for a
    door's own purposes, a call's `arguments` string), so its reading never depends on the stack."""
    return decode(data, _PLAIN)


def _nesting(text: str) -> int:
    """The deepest point of `text`'s brackets outside its strings (unclosed ones count, as the decoder
    goes down into them before it finds the end missing); only asked of a body with more brackets than
    the limit, so most bodies never pay for it."""
    shape = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, shape)), default=0)
