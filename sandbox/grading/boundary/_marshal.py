"""Values and exceptions as plain JSON data, between the grader and the process running learner code.

Never pickle: unpickling runs code, and the learner's process is untrusted. A skyl value (a
`Response`, a `Message`, a `ToolCall`, any dataclass the skyl model exports) travels as its fields and
is rebuilt, validated, from an allowlist of classes; a value of any other type travels as its type
name and repr, and comes back as an `Opaque` stand-in that prints the same, so the grader can say
"returned <repr> (<type>)" without ever holding the learner's object.

An exception travels as its type, message and the frames of the learner's own file, with its cause
chain; the grader rebuilds it as a `RemoteError` whose class prints under the learner's type name.
"""

from __future__ import annotations

import builtins
import dataclasses
import enum
import hashlib
import json
import reprlib
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ... import skyl

__all__ = [
    "Opaque",
    "TOOL_ERRORS",
    "RemoteError",
    "UnreadableValue",
    "body_digest",
    "error_from_data",
    "error_to_data",
    "from_data",
    "learner_frames",
    "read_value",
    "to_data",
]

TOOL_ERRORS: dict[str, type[Exception]] = {
    error.__name__: error
    for error in (KeyError, RuntimeError, LookupError, TypeError, ValueError, TimeoutError, ConnectionError, OSError)
}
"""What the grader's tools raise, by name: the name travels between the grader and the worker, the class
is made again on the learner's side."""

_CLASSES: dict[str, type] = {name: value for name in skyl.__all__ if isinstance(value := getattr(skyl, name), type)}
_DATACLASSES = {name: cls for name, cls in _CLASSES.items() if dataclasses.is_dataclass(cls)}
_ENUMS = {name: cls for name, cls in _CLASSES.items() if issubclass(cls, enum.Enum)}
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 200
_CHAIN = 8
"""Exceptions kept along a `__cause__`/`__context__` chain: enough to find a failing tool behind a wrap."""
_FRAMES = 8
_MESSAGE = 2000
_PARSED = 300
"""Characters kept of the text a JSONDecodeError failed on: the feedback shows what json.loads was given."""


class UnreadableValue(ValueError):
    """Data that does not describe a value this module writes."""


class Opaque:
    """A stand-in for a value of a type the grader does not rebuild: it prints as the learner's did."""

    def __init__(self, text: str) -> None:
        self._text = text

    def __repr__(self) -> str:
        return self._text


_OPAQUE: dict[str, type[Opaque]] = {}


def _opaque(type_name: str, text: str) -> Opaque:
    """An `Opaque` whose class carries the learner's type name: `short()` prints `(Foo)` for a Foo."""
    name = type_name if type_name.isidentifier() else "object"
    cls = _OPAQUE.get(name) or _OPAQUE.setdefault(name, type(name, (Opaque,), {}))
    return cls(text)


# -- values ---------------------------------------------------------------------------------------------


def to_data(value: Any, depth: int = 0) -> Any:
    """`value` as JSON-able data; anything unknown (or nested too deep) as its type name and repr."""
    if value is None or isinstance(value, (bool, int, float, str)) and type(value) in (bool, int, float, str):
        return value
    if depth > 40:
        return _describe(value)
    if type(value) is list:
        return [to_data(item, depth + 1) for item in value]
    if type(value) is tuple:
        return {"$": "tuple", "items": [to_data(item, depth + 1) for item in value]}
    if type(value) is dict and all(type(key) is str for key in value):
        return {"$": "dict", "items": {key: to_data(item, depth + 1) for key, item in value.items()}}
    for name, kind in _ENUMS.items():
        if isinstance(value, kind):
            return {"$": name, "value": value.value}
    for name, dataclass in _DATACLASSES.items():
        if isinstance(value, dataclass):
            fields = dataclasses.fields(dataclass)
            return {
                "$": name,
                "fields": {field.name: to_data(getattr(value, field.name), depth + 1) for field in fields},
            }
    return _describe(value)


def _describe(value: Any) -> dict[str, str]:
    try:
        text = _REPR.repr(value)
    except Exception:  # noqa: BLE001 - a learner's __repr__ may raise anything
        text = f"<{type(value).__name__} object>"
    return {"$": "opaque", "type": type(value).__name__, "repr": text}


def from_data(data: Any) -> Any:
    """The value `to_data` described; skyl values are rebuilt (and so validated) by their own classes."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [from_data(item) for item in data]
    if not isinstance(data, dict) or not isinstance(data.get("$"), str):
        raise UnreadableValue(f"not a described value: {_REPR.repr(data)}")
    kind = data["$"]
    try:
        if kind == "tuple":
            return tuple(from_data(item) for item in data["items"])
        if kind == "dict":
            return {str(key): from_data(item) for key, item in data["items"].items()}
        if kind == "opaque":
            return _opaque(str(data["type"]), str(data["repr"]))
        if kind in _ENUMS:
            return _ENUMS[kind](data["value"])
        if kind in _DATACLASSES:
            return _DATACLASSES[kind](**{str(key): from_data(item) for key, item in data["fields"].items()})
    except UnreadableValue:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the class's own checks refuse
        raise UnreadableValue(f"{kind}: {exc}") from None
    raise UnreadableValue(f"unknown kind of value {kind!r}")


def read_value(data: Any) -> Any:
    """`from_data`, with anything unreadable kept as an `Opaque` that says so."""
    try:
        return from_data(data)
    except (UnreadableValue, RecursionError):
        kind = data.get("$") if isinstance(data, dict) else type(data).__name__
        return _opaque(str(kind), f"<a {kind} the grader could not rebuild>")


# -- exceptions -----------------------------------------------------------------------------------------


def error_to_data(error: BaseException, source: Path, tag: Callable[[BaseException], Mapping[str, bool]]) -> Any:
    """`error` and its chain as data. `tag` adds flags the grader reads (a failing tool's error...)."""
    return _error(error, source, tag, _CHAIN)


def _error(error: BaseException, source: Path, tag: Callable[[BaseException], Mapping[str, bool]], left: int) -> Any:
    frames = [
        [frame.filename, frame.lineno, frame.name, frame.line or ""]
        for frame in traceback.extract_tb(error.__traceback__)
        if Path(frame.filename) == source
    ][-_FRAMES:]
    try:
        message = str(error)
    except Exception:  # noqa: BLE001 - a learner's __str__ may raise anything
        message = f"<{type(error).__name__} whose str() raised>"
    data: dict[str, Any] = {
        "type": type(error).__qualname__,
        "module": type(error).__module__,
        "builtin": next(
            (
                cls.__name__
                for cls in type(error).__mro__
                if cls.__module__ == "builtins" and issubclass(cls, Exception)
            ),
            "Exception",
        ),
        "message": message[:_MESSAGE],
        "frames": frames,
        **tag(error),
    }
    if isinstance(error, json.JSONDecodeError) and isinstance(error.doc, str):
        data["parsed"] = error.doc[:_PARSED]
    if left > 1:
        if error.__cause__ is not None:
            data["cause"] = _error(error.__cause__, source, tag, left - 1)
        elif error.__context__ is not None and not error.__suppress_context__:
            data["context"] = _error(error.__context__, source, tag, left - 1)
    return data


class RemoteError(Exception):
    """An exception raised by learner code in its own process, rebuilt from data.

    Its class prints as the learner's (`KeyError: 'get_time'`, `json.decoder.JSONDecodeError: ...`) and
    derives from the nearest built-in exception of the original (`ValueError` for a JSONDecodeError),
    so `isinstance(error, RuntimeError)` means what it meant; `frames` holds the frames of the learner's
    own file, for the traceback a learner is shown.
    """

    frames: list[traceback.FrameSummary]
    flags: dict[str, bool]
    parsed: str | None
    """For a JSONDecodeError: the text it failed to parse (its first 300 characters)."""

    def __init__(self, message: str) -> None:
        Exception.__init__(self, message)
        self.message = message
        self.frames = []
        self.flags = {}
        self.parsed = None

    def __str__(self) -> str:
        return self.message


_REMOTE: dict[tuple[str, str, str], type[RemoteError]] = {}


def _remote_class(module: str, qualname: str, builtin: str) -> type[RemoteError]:
    name = qualname.rsplit(".", 1)[-1]
    base = getattr(builtins, builtin, None) if builtin.isidentifier() else None
    bases: tuple[type, ...] = (RemoteError,)
    if isinstance(base, type) and issubclass(base, Exception) and base is not Exception:
        bases = (RemoteError, base)
    try:
        cls = type(name if name.isidentifier() else "Exception", bases, {"__qualname__": qualname})
    except TypeError:  # a layout conflict: keep the name, lose the base
        cls = type(name if name.isidentifier() else "Exception", (RemoteError,), {"__qualname__": qualname})
    cls.__module__ = module
    _REMOTE[(module, qualname, builtin)] = cls
    return cls


def error_from_data(data: Any, *, depth: int = 0) -> RemoteError:
    """The `RemoteError` that `error_to_data` described, its cause or context chained as it was."""
    if not isinstance(data, dict):
        data = {}
    qualname = str(data.get("type", "Exception"))
    module = str(data.get("module", "builtins"))
    builtin = str(data.get("builtin", "Exception"))
    cls = _REMOTE.get((module, qualname, builtin)) or _remote_class(module, qualname, builtin)
    message = str(data.get("message", ""))
    try:
        error = cls(message)
    except Exception:  # noqa: BLE001 - a built-in base that wants other arguments
        cls = _REMOTE[(module, qualname, builtin)] = _remote_class(module, qualname, "Exception")
        error = cls(message)
    error.frames = [
        traceback.FrameSummary(str(filename), int(lineno), str(name), line=str(line))
        for filename, lineno, name, line in _frames(data.get("frames"))
    ]
    error.flags = {key: value for key, value in data.items() if isinstance(value, bool)}
    if isinstance(data.get("parsed"), str):
        error.parsed = data["parsed"][:_PARSED]
    if depth < _CHAIN:
        if isinstance(data.get("cause"), dict):
            error.__cause__ = error_from_data(data["cause"], depth=depth + 1)
        elif isinstance(data.get("context"), dict):
            error.__context__ = error_from_data(data["context"], depth=depth + 1)
    return error


def _frames(data: Any) -> list[tuple[Any, Any, Any, Any]]:
    if not isinstance(data, list):
        return []
    return [
        (frame[0], frame[1], frame[2], frame[3])
        for frame in data[:_FRAMES]
        if isinstance(frame, list) and len(frame) == 4 and isinstance(frame[1], int)
    ]


def body_digest(body: bytes) -> str:
    """How a worker's note names the request body it describes (the grader keeps the note only if the
    sandbox received those bytes)."""
    return hashlib.blake2b(body, digest_size=16).hexdigest()


def learner_frames(error: BaseException, source: Path) -> list[traceback.FrameSummary]:
    """The frames of `error` in the learner's file `source`: where the fix will be."""
    if isinstance(error, RemoteError):
        return list(error.frames)
    return [frame for frame in traceback.extract_tb(error.__traceback__) if Path(frame.filename) == source]
