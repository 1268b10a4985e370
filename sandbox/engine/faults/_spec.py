"""The fault spec: what a scripted fault is, and the one-line refusals of a spec that cannot be played.

A fault answers one model request instead of (or while) the script answers it. Kinds:

- `rate_limit`: the provider's 429 with its body and its retry hint headers;
- `overloaded`: Anthropic's 529 `overloaded_error`; OpenAI's and Gemini's 503;
- `server_error`: a 5xx the provider sends (500 by default);
- `stream_error`: the provider's error event inside a stream, after `after` frames;
- `truncated`: a stream that ends cleanly after `after` frames, without its final event;
- `cut`: the connection closes after `after` frames (0: before any byte);
- `latency`: the answer waits `first_byte` seconds before its first byte, `between` seconds between frames.

Where a fault plays: a `Step(fault=...)` answers the step's requests; a fault with `request=N` answers
the N-th model request of a conversation (N = assistant turns in its history + 1). It plays on `times`
attempts of that request, then the script answers; several faults for one request play in order, one
per attempt. This module touches nothing but its arguments.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from ..._exceptions import ScenarioError
from . import _statuses

__all__ = ["ERROR_KINDS", "KINDS", "STREAM_KINDS", "Fault", "FaultKind", "fault_from_dict", "parse_faults"]

FaultKind = Literal["rate_limit", "overloaded", "server_error", "stream_error", "truncated", "cut", "latency"]
KINDS: tuple[str, ...] = ("rate_limit", "overloaded", "server_error", "stream_error", "truncated", "cut", "latency")
ERROR_KINDS = ("rate_limit", "overloaded", "server_error")
"""Kinds answered with an error status instead of the turn."""
STREAM_KINDS = ("stream_error", "truncated", "cut")
"""Kinds that break the answer's frames."""
DEFAULT_RETRY_AFTER = 0.02
"""Seconds: the hint a scripted fault sends by default, so retries in tests take tens of milliseconds."""
MAX_TIMES = 10
MAX_SECONDS = 60.0
_PROVIDERS = ("openai", "openai-responses", "anthropic", "gemini")


@dataclass(frozen=True)
class Fault:
    """One scripted fault. Bad values are refused here, each with one line saying what is allowed."""

    kind: FaultKind
    """One of `KINDS` (module docstring)."""
    request: int | None = None
    """The model request it answers, counted from 1 within a conversation; None in a `Step(fault=...)`."""
    times: int = 1
    """Attempts of that request it answers before the script does (1 to 10)."""
    status: int | None = None
    """For the error kinds: a status the provider sends for that kind (default: its usual one)."""
    provider: str | None = None
    """Play only on this wire format (`openai`, `openai-responses`, `anthropic`, `gemini`); None: on all."""
    retry_after: float = DEFAULT_RETRY_AFTER
    """Seconds the provider's retry hint asks for (0: no hint, the client's own backoff applies)."""
    after: int | None = None
    """For `stream_error`, `truncated`, `cut`: frames sent before the break (default: 1; a cut: 0)."""
    first_byte: float = 0.0
    """For `latency`: seconds before the first byte."""
    between: float = 0.0
    """For `latency`: seconds between frames."""

    def __post_init__(self) -> None:
        where = f"fault {self.kind!r}"
        if self.kind not in KINDS:
            raise ScenarioError(f"Unknown fault kind {self.kind!r}: use one of {', '.join(KINDS)}.")
        if self.provider is not None and self.provider not in _PROVIDERS:
            choices = ", ".join(_PROVIDERS)
            raise ScenarioError(f"{where}: provider={self.provider!r}; use one of {choices}, or leave it out.")
        _whole(where, "request", self.request, 1, None, optional=True)
        _whole(where, "times", self.times, 1, MAX_TIMES)
        _whole(where, "after", self.after, 0, None, optional=True)
        for name in ("retry_after", "first_byte", "between"):
            _seconds(where, name, getattr(self, name))
        if self.status is not None:
            self._check_status(where)
        if self.after is not None and self.kind not in STREAM_KINDS:
            raise ScenarioError(f"{where}: after= counts stream frames; only {', '.join(STREAM_KINDS)} take it.")
        if self.kind == "latency":
            if not (self.first_byte or self.between):
                raise ScenarioError(f"{where}: give first_byte= or between= (seconds, up to {MAX_SECONDS:g}).")
        elif self.first_byte or self.between:
            raise ScenarioError(f"{where}: first_byte= and between= belong to a 'latency' fault; add one of those.")

    def _check_status(self, where: str) -> None:
        if self.kind not in ERROR_KINDS:
            raise ScenarioError(f"{where}: status= belongs to {', '.join(ERROR_KINDS)}; a {self.kind} has none.")
        _whole(where, "status", self.status, 100, 599)
        providers = (self.provider,) if self.provider else _PROVIDERS
        refusing = [name for name in providers if self.status not in _statuses.allowed(name, self.kind)]
        if not refusing:
            return
        sending = [name for name in _PROVIDERS if self.status in _statuses.allowed(name, self.kind)]
        usual = "; ".join(f"{name} {_list(_statuses.allowed(name, self.kind))}" for name in refusing)
        if sending and not self.provider:
            advice = f"add provider={sending[0]!r}, or leave status out"
        else:
            advice = "leave status out for each provider's own"
        raise ScenarioError(
            f"{where}: status={self.status} is a status {', '.join(refusing)} never sends for it "
            f"(it sends {usual}): {advice}."
        )

    def plays_on(self, provider: str) -> bool:
        return self.provider is None or self.provider == provider

    @property
    def is_error(self) -> bool:
        return self.kind in ERROR_KINDS

    def frames_before_break(self) -> int:
        return self.after if self.after is not None else (0 if self.kind == "cut" else 1)

    def __repr__(self) -> str:
        defaults = {field.name: field.default for field in fields(self)}
        shown = [repr(self.kind)] + [
            f"{name}={getattr(self, name)!r}"
            for name in defaults
            if name != "kind" and getattr(self, name) != defaults[name]
        ]
        return f"Fault({', '.join(shown)})"


def _list(statuses: tuple[int, ...]) -> str:
    return " or ".join(str(status) for status in statuses)


def _whole(where: str, name: str, value: Any, low: int, high: int | None, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise ScenarioError(f"{where}: {name}={value!r}; use a whole number {bound}.")


def _seconds(where: str, name: str, value: Any) -> None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not 0 <= value <= MAX_SECONDS
    ):
        raise ScenarioError(
            f"{where}: {name}={value!r}; use seconds from 0 to {MAX_SECONDS:g} (tens of milliseconds keep tests fast)."
        )


_FIELDS = {field.name for field in fields(Fault)}


def fault_from_dict(data: Any, *, where: str) -> Fault:
    """A fault from its TOML table: `{ kind = "rate_limit", request = 2, retry_after = 0.02 }`."""
    if not isinstance(data, Mapping):
        raise ScenarioError(f'{where}: a fault is a table such as {{ kind = "rate_limit" }}, got {data!r}.')
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise ScenarioError(f"{where}: a fault has no {', '.join(unknown)}; its keys are {', '.join(sorted(_FIELDS))}.")
    if "kind" not in data:
        raise ScenarioError(f"{where}: a fault needs a kind, one of {', '.join(KINDS)}.")
    try:
        return Fault(**dict(data))
    except ScenarioError as exc:
        raise ScenarioError(f"{where}: {exc}") from None


def parse_faults(text: str) -> tuple[Fault, ...]:
    """The ad-hoc form (`sandbox serve --faults`): faults separated by commas, each
    `KIND[@REQUEST][:NAME=VALUE]...`, e.g. `rate_limit@2,cut@3:after=2,latency:first_byte=0.05`."""
    if not isinstance(text, str) or not text.strip():
        raise ScenarioError("faults: give at least one, e.g. 'rate_limit@2' (KIND[@REQUEST][:NAME=VALUE]...).")
    return tuple(_parse_one(part.strip()) for part in text.split(",") if part.strip())


def _parse_one(text: str) -> Fault:
    head, *options = text.split(":")
    kind, _, request = head.partition("@")
    data: dict[str, Any] = {"kind": kind.strip()}
    if request:
        data["request"] = _number(text, "request", request)
    for option in options:
        name, equals, value = option.partition("=")
        name = name.strip()
        if not equals or name not in _FIELDS - {"kind", "request"}:
            allowed = ", ".join(sorted(_FIELDS - {"kind", "request"}))
            raise ScenarioError(f"fault {text!r}: {option!r} is not NAME=VALUE with NAME one of {allowed}.")
        data[name] = value.strip() if name == "provider" else _number(text, name, value)
    return fault_from_dict(data, where=f"faults={text!r}")


def _number(text: str, name: str, value: str) -> int | float:
    try:
        number = float(value)
    except ValueError:
        raise ScenarioError(f"fault {text!r}: {name}={value!r} is not a number.") from None
    return int(number) if number.is_integer() and name not in ("retry_after", "first_byte", "between") else number
