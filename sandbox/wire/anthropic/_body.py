"""An Anthropic Messages request body as the API reads it: the JSON (with the API's own "not valid
JSON" texts), and the checked shape that `_validate` builds and `_rules` walks. Touches only the
request bytes; raises nothing but `Rejection`.

The API validates the body like a pydantic model and answers `<loc>: <msg>`
(`messages.0.content: Input should be a valid list`), then applies its tool-pairing rules, in the
order of the reference's "Suggested validation order" (A.6): schema and field checks (`_validate`),
tools defined, consecutive same-role turns merged, then the walk over the turns (`_rules`).
The first violation wins.

Evidence for each message is noted beside it: [CAP] captured from the live API, [ISSUE] quoted in a
public issue, [3P] quoted by third-party code, [INF] inferred (pydantic's own wording in Python mode,
which every captured `<loc>: <msg>` text matches, or our best guess).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ...messages._types import Tool
from .._base import Rule
from .._json import decode

__all__ = ["Block", "Body", "Rejection", "WireMessage", "fail", "load_json"]


class Rejection(Exception):
    """One violation: the API's message, and where it points in the request's `messages`."""

    def __init__(
        self,
        message: str,
        rule: Rule = Rule.MALFORMED,
        *,
        message_index: int | None = None,
        block_index: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.rule = rule
        self.message_index = message_index
        self.block_index = block_index


@dataclass(slots=True)
class Block:
    """A content block after validation, with lax-coerced values (`"is_error": "true"` -> True)."""

    kind: str
    text: str = ""
    id: str = ""
    name: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    tool_use_id: str = ""
    content: str = ""
    is_error: bool = False
    reasoning: dict[str, Any] | None = None
    """A `thinking` or `redacted_thinking` block as sent: its echo is checked whole (`_reasoning`)."""


@dataclass(slots=True)
class WireMessage:
    """One entry of `messages`, as sent (not yet merged with its same-role neighbours)."""

    role: str
    blocks: list[Block]
    """String content becomes one text block; an empty string, no blocks."""


@dataclass(slots=True)
class Body:
    """A request body that passed the schema: what the rules and the neutral model need."""

    model: str
    messages: list[WireMessage]
    system: list[str]
    tools: list[Tool]
    """The custom tools; server tools (`web_search_20250305`, ...) only count in `tool_count`."""
    tool_count: int
    tool_choice: str | None
    stream: bool


def fail(where: str, message: str) -> NoReturn:
    raise Rejection(f"{where}: {message}" if where else message)


# -- JSON -------------------------------------------------------------------------------------------

_NOT_JSON = "The request body is not valid JSON"
# [ISSUE] promptfoo#4489, anthropics/claude-code#8272, #9586: "The request body is not valid JSON:
# unexpected character: line 8 column 316 (char 466)", "... no low surrogate in string: line 1 column
# 37589 (char 37588)", "... invalid high surrogate in string: ...". The reasons are the JSON parser's
# (orjson/yyjson); we map Python's reasons onto them. Every reason but those three is [INF].


class _Constant(ValueError):
    """Python's json accepts NaN and Infinity; the API's parser does not."""


def _reject_constant(name: str) -> Any:
    raise _Constant(name)


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _not_json(reason: str, text: str, pos: int) -> NoReturn:
    line = text.count("\n", 0, pos) + 1
    column = pos - text.rfind("\n", 0, pos)
    raise Rejection(f"{_NOT_JSON}: {reason}: line {line} column {column} (char {pos})")


def _reason(error: json.JSONDecodeError) -> str:
    if error.msg.startswith("Extra data"):
        return "unexpected content after document"
    if error.pos >= len(error.doc) or error.msg.startswith("Unterminated string"):
        return "unexpected end of data"
    if error.msg.startswith("Invalid control character"):
        return "unexpected control character in string"
    if error.msg.startswith("Invalid \\"):
        return "invalid escaped character in string"
    return "unexpected character"


_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)


def _check_surrogates(text: str) -> None:
    """Python decodes a lone `\\ud83d` escape into a lone surrogate; the API rejects it."""
    pending: re.Match[str] | None = None
    for match in _ESCAPE.finditer(text):
        code = int(match[1], 16) if match[1] else None
        low = code is not None and 0xDC00 <= code <= 0xDFFF
        if pending is not None:
            if not (low and match.start() == pending.end()):
                _not_json("no low surrogate in string", text, pending.end())
            pending = None
            continue
        if code is not None and 0xD800 <= code <= 0xDBFF:
            pending = match
        elif low:
            _not_json("invalid high surrogate in string", text, match.start())
    if pending is not None:
        _not_json("no low surrogate in string", text, pending.end())


def load_json(body: bytes) -> Any:
    """The decoded body, or `Rejection` with the API's "not valid JSON" message."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        good = body[: error.start].decode("utf-8", errors="replace")
        _not_json("invalid UTF-8 encoding in string", good, len(good))  # [INF]
    if not text:
        # [INF] orjson's own wording for an empty document.
        raise Rejection(f"{_NOT_JSON}: Input is a zero-length, empty document: line 1 column 1 (char 0)")
    try:
        data = decode(text, _DECODER)
    except _Constant as error:
        _not_json("unexpected character", text, max(text.find(str(error)), 0))
    except json.JSONDecodeError as error:
        _not_json(_reason(error), text, error.pos)
    except ValueError:  # an integer longer than Python's 4300-digit conversion limit
        raise Rejection(f"{_NOT_JSON}: number out of range") from None  # [INF]
    except RecursionError:
        raise Rejection(f"{_NOT_JSON}: recursion limit exceeded") from None  # [INF]
    if "\\u" in text:
        _check_surrogates(text)
    return data


# -- pydantic-style field checks (lax mode, as pydantic validates decoded JSON in Python mode) -------
