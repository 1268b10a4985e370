"""Scenarios: what the scripted model does, as data.

A scenario names its tools and its steps. A step is one model turn: prose, tool calls, or both.
Whether the script moves on after a step of calls depends on the results the loop sent back:

- `repeat="once"`: move on whatever came back;
- `repeat="until_usable"`: ask again (same calls, new ids) while any result is unusable (empty,
  marked as an error, or text that reads as an error): the way real models react to tools that
  return nothing useful;
- `repeat="forever"`: ask again every time: a runaway loop.

A scenario with `reasoning = true` plays a reasoning model: every turn also carries the provider's
own reasoning (OpenAI Responses reasoning items, Anthropic thinking blocks when the request enables
thinking, Gemini thought signatures), which the provider then wants back with the turn. A step's
`reasoning` text is what the model thought; `redacted_thinking = true` makes Anthropic hide it.

A step may fail before it answers: `Step(fault=Fault("rate_limit"))` plays the provider's 429 on the
step's request first (see `sandbox.engine.faults`); a scenario's `faults` play on numbered requests.

An answer's text may quote what the loop sent back: `{results}` is every result of the
conversation so far, quoted and joined with "; "; `{last[0]}` is the first result of the last round.

A step with `when` plays only for a request that meets it (see `sandbox.engine._when`); the steps
after it without one follow it in script order, as its branch. After each played step, the next is
the following step of the branch when there is one, otherwise the first branch not yet played whose
`when` the request meets. A scenario may instead be a function, `respond`, that returns each turn.

A step's `output` is a structured answer: the JSON the request's schema asks for (`_structured`).
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

from .._exceptions import ScenarioError
from ..messages._types import StopReason, Tool
from ..wire import Conversation
from ._when import Condition, When, when_from_dict
from .faults._spec import Fault, fault_from_dict

__all__ = ["Call", "Scenario", "Step", "is_usable"]

Repeat = Literal["once", "until_usable", "forever"]
_REPEATS = ("once", "until_usable", "forever")
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_ERROR_LOOKING = re.compile(r"^\s*(error|exception|traceback|failed|failure)\b", re.IGNORECASE)


def is_usable(content: str, *, is_error: bool = False) -> bool:
    """Would a model accept this tool result as an answer? Empty text and errors make it ask again."""
    return not is_error and bool(content.strip()) and not _ERROR_LOOKING.match(content)


@dataclass(frozen=True)
class Call:
    """A call the scripted model makes."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Read-only: scenarios are shared by every test in a process, and learner code can reach them.
        object.__setattr__(self, "arguments", MappingProxyType(dict(self.arguments)))

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self.arguments.items())
        return f"{self.name}({args})"


@dataclass(frozen=True)
class Step:
    """One scripted model turn."""

    text: str = ""
    """Prose. In a step without calls this is the answer, and may quote results (module docstring)."""
    calls: Sequence[Call] = ()
    repeat: Repeat = "once"
    stop: StopReason | None = None
    """Overrides the neutral stop reason (default: TOOL_USE with calls, END_TURN without)."""
    stop_reasons: Mapping[str, str] = field(default_factory=dict)
    """Per provider, the raw stop value to send: `{"openai": "stop", "anthropic": "max_tokens"}`."""
    reasoning: str = ""
    """In a reasoning scenario, what the model thought before this turn (a default when empty)."""
    redacted_thinking: bool = False
    """In a reasoning scenario, Anthropic also sends this turn a `redacted_thinking` block."""
    fault: Fault | None = None
    """A fault that answers this step's requests first (`times` attempts each), then the step does."""
    when: Condition | None = None
    """Play this step only for a request that meets it: a `When`, or a predicate of the conversation."""
    output: Any = None
    """A structured answer (a JSON object or value), for a request that asks for JSON by a schema."""

    def __post_init__(self) -> None:
        if self.when is not None and not isinstance(self.when, When) and not callable(self.when):
            raise ScenarioError(
                f"Step(when={self.when!r}): give a sandbox.When(user=..., ...) or a function of the conversation "
                "returning True or False."
            )
        if self.output is not None and (self.calls or self.text):
            raise ScenarioError(
                "Step(output=...) is a structured answer on its own: give its calls or text in another step."
            )
        if self.fault is not None and (not isinstance(self.fault, Fault) or self.fault.request is not None):
            raise ScenarioError(
                f"Step(fault={self.fault!r}): give a sandbox.Fault without request=; it plays on this step's "
                "requests. A fault for a numbered request goes in Scenario(faults=[...])."
            )
        object.__setattr__(self, "calls", tuple(self.calls))
        object.__setattr__(self, "stop_reasons", MappingProxyType(dict(self.stop_reasons)))

    @property
    def is_answer(self) -> bool:
        return not self.calls

    def thought(self) -> str:
        """What a reasoning model thought before this turn: the step's own text, or one written from it."""
        if self.reasoning:
            return self.reasoning
        if not self.calls:
            return "I have what I need from the tools, so I can answer now."
        planned = ", ".join(repr(call) for call in self.calls)
        return f"To answer, I need the tools first: I will call {planned}."


@dataclass(frozen=True)
class Scenario:
    """A named script: the tools the model may call and the turns it takes."""

    name: str
    steps: Sequence[Step] = ()
    tools: Sequence[Tool] = ()
    description: str = ""
    prompt: str = ""
    """The user message the scenario is written for (any user message is accepted)."""
    tool_outputs: Mapping[str, str] = field(default_factory=dict)
    """What a well-behaved tool returns, by call as written by `repr(Call)`: used by `sandbox replay`
    and by graders that need a plausible `run`."""
    reasoning: bool = False
    """Plays a reasoning model: each turn carries the provider's reasoning, which must travel back."""
    faults: Sequence[Fault] = ()
    """Faults for numbered requests of each conversation (`Fault(..., request=N)`)."""
    respond: Callable[[Conversation], Step | str | None] | None = None
    """Instead of steps: a function of the request's conversation (its messages before the turn asked
    for, its tools) that returns the turn, a `Step` or its text; None when it has no answer. Called
    again for every earlier turn of each request, so it must answer the same history the same way."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(self.steps))
        object.__setattr__(self, "faults", tuple(self.faults))
        object.__setattr__(self, "tools", tuple(self.tools))
        object.__setattr__(self, "tool_outputs", MappingProxyType(dict(self.tool_outputs)))
        self._check()

    def with_reasoning(self, name: str) -> Scenario:
        """The same script played by a reasoning model, under another name."""
        return replace(self, name=name, reasoning=True, description=f"{self.description} (A reasoning model.)".strip())

    @functools.cached_property
    def called(self) -> frozenset[str]:
        """The names of the tools the script calls: every request is checked for them, so computed once."""
        return frozenset(call.name for step in self.steps for call in step.calls)

    @functools.cached_property
    def plays_faults(self) -> bool:
        """Whether a fault of its own may ever play (the scenario's, or a step's): the engine asks on
        every request, and nearly every scenario has none."""
        return bool(self.faults) or self.respond is not None or any(step.fault is not None for step in self.steps)

    @functools.cached_property
    def selects(self) -> bool:
        """Whether the request's content chooses the steps (a `when`, or `respond`), not script order alone."""
        return self.respond is not None or any(step.when is not None for step in self.steps)

    def faults_at(self, step: Step) -> tuple[Fault, ...]:
        """The scenario's own faults that may play while `step` answers."""
        if not self.faults and step.fault is None:
            return ()
        return (*((step.fault,) if step.fault is not None else ()), *self.faults)

    def tool(self, name: str) -> Tool:
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise ScenarioError(f"Scenario {self.name!r} has no tool named {name!r}.")

    def _check(self) -> None:
        where = f"Scenario {self.name!r}"
        if not _NAME.match(self.name):
            raise ScenarioError(f"{where}: name must match [a-zA-Z0-9_-]{{1,64}} (it is also the model name).")
        if self.respond is not None:
            if self.steps or not callable(self.respond):
                raise ScenarioError(
                    f"{where}: respond= takes a function of the conversation and replaces steps=; give one of them."
                )
            return
        if not self.steps:
            raise ScenarioError(f"{where} has no steps: add at least one answer step, or respond=a_function.")
        declared = {tool.name for tool in self.tools}
        for index, step in enumerate(self.steps):
            if step.repeat not in _REPEATS:
                raise ScenarioError(f"{where}, step {index}: repeat={step.repeat!r}; use one of {_REPEATS}.")
            if step.is_answer and step.repeat != "once":
                raise ScenarioError(f"{where}, step {index}: only a step with calls can repeat.")
            for call in step.calls:
                if call.name not in declared:
                    raise ScenarioError(
                        f"{where}, step {index} calls {call.name!r}, which is not among its tools "
                        f"{sorted(declared)}. Declare it under [[tools]]."
                    )
        for fault in self.faults:
            if not isinstance(fault, Fault) or fault.request is None:
                raise ScenarioError(
                    f"{where}: faults={fault!r}: each needs request=N (the model request it answers, from 1); "
                    "a fault for one step goes in that step's fault=."
                )
        last = self.steps[-1]
        if not self.selects and not last.is_answer and last.repeat != "forever":
            raise ScenarioError(
                f"{where}: the last step must be an answer (no calls) or repeat forever, "
                "so the script always knows what to say next."
            )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "<dict>") -> Scenario:
        """Build a scenario from the TOML layout (see the catalogue files for examples)."""
        try:
            return cls(
                name=_str(data, "name", source),
                description=_field(data, "description", str, "", source, "a string").strip(),
                prompt=_field(data, "prompt", str, "", source, "a string"),
                tools=[_tool(raw, source) for raw in _list(data, "tools", source)],
                steps=[_step(raw, index, source) for index, raw in enumerate(_list(data, "steps", source))],
                tool_outputs=_strings(data, "tool_outputs", source),
                reasoning=_flag(data, "reasoning", source),
                faults=[
                    fault_from_dict(raw, where=f"{source}: [[faults]] entry {index}")
                    for index, raw in enumerate(_list(data, "faults", source))
                ],
            )
        except ScenarioError:
            raise
        except (TypeError, ValueError, AttributeError) as exc:
            raise ScenarioError(f"{source}: {exc}") from None


def _str(data: Mapping[str, Any], key: str, source: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise ScenarioError(f"{source}: {key!r} must be a non-empty string, got {value!r}.")
    return value


def _field(data: Mapping[str, Any], key: str, kind: type, default: Any, where: str, what: str) -> Any:
    """`data[key]` if it has the right type (or is absent): a wrong type names the field."""
    value = data.get(key, default)
    if not isinstance(value, kind):
        raise ScenarioError(f"{where}: {key!r} must be {what}, got {value!r}.")
    return value


def _strings(data: Mapping[str, Any], key: str, where: str) -> dict[str, str]:
    table = _field(data, key, Mapping, {}, where, "a table of strings")
    for name, value in table.items():
        if not isinstance(value, str):
            raise ScenarioError(f"{where}: {key}.{name} must be a string, got {value!r}.")
    return dict(table)


def _flag(data: Mapping[str, Any], key: str, source: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise ScenarioError(f"{source}: {key!r} must be true or false, got {value!r}.")
    return value


def _list(data: Mapping[str, Any], key: str, source: str) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise ScenarioError(f"{source}: {key!r} must be a list (use [[{key}]] tables), got {value!r}.")
    return value


def _tool(raw: Any, source: str) -> Tool:
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"{source}: each [[tools]] entry must be a table, got {raw!r}.")
    parameters = raw.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(parameters, Mapping) or parameters.get("type") != "object":
        raise ScenarioError(f"{source}: tool {raw.get('name')!r} parameters must be a JSON schema object.")
    name = _str(raw, "name", source)
    return Tool(name, _field(raw, "description", str, "", f"{source}: tool {name!r}", "a string"), dict(parameters))


def _step(raw: Any, index: int, source: str) -> Step:
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"{source}: [[steps]] entry {index} must be a table, got {raw!r}.")
    unknown = set(raw) - {
        "text",
        "calls",
        "repeat",
        "stop",
        "stop_reasons",
        "reasoning",
        "redacted_thinking",
        "fault",
        "when",
        "output",
    }
    if unknown:
        raise ScenarioError(f"{source}: step {index} has unknown keys {sorted(unknown)}.")
    where = f"{source}: step {index}"
    calls = []
    for call in _field(raw, "calls", list, [], where, "a list of calls ({ name = ..., arguments = {...} })"):
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            raise ScenarioError(f"{where}: each call needs a name, got {call!r}.")
        arguments = _field(call, "arguments", Mapping, {}, f"{where}: call {call['name']!r}", "a table")
        calls.append(Call(call["name"], dict(arguments)))
    stop = _field(raw, "stop", str, None, where, "a string") if raw.get("stop") is not None else None
    try:
        stop_reason = StopReason(stop) if stop is not None else None
    except ValueError:
        choices = [reason.value for reason in StopReason]
        raise ScenarioError(f"{source}: step {index}: stop={stop!r}; use one of {choices}.") from None
    return Step(
        text=_field(raw, "text", str, "", where, "a string"),
        calls=calls,
        repeat=_field(raw, "repeat", str, "once", where, f"one of {_REPEATS}"),
        stop=stop_reason,
        stop_reasons=_strings(raw, "stop_reasons", where),
        reasoning=_field(raw, "reasoning", str, "", where, "a string"),
        redacted_thinking=_flag(raw, "redacted_thinking", where),
        fault=fault_from_dict(raw["fault"], where=f"{where}: fault") if "fault" in raw else None,
        when=when_from_dict(raw["when"], where) if "when" in raw else None,
        output=raw.get("output"),
    )


class _QuoteFormatter(string.Formatter):
    """Fills an answer template; a placeholder that cannot be filled stays visible instead of crashing."""

    def get_field(self, field_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        try:
            return super().get_field(field_name, args, kwargs)
        except (KeyError, IndexError, AttributeError, TypeError):
            return "{" + field_name + "}", field_name


_FORMATTER = _QuoteFormatter()


def render_text(template: str, results: Sequence[str], last: Sequence[str]) -> str:
    if "{" not in template:
        return template
    if len(template) + sum(map(len, results)) + sum(map(len, last)) <= _CACHED_CHARS:
        return _render_cached(template, tuple(results), tuple(last))
    return _render(template, results, last)


_CACHED_CHARS = 4096
"""Answers filled from this much text at most are remembered: a loop's every run fills its template
with the same results, and a long quoted result is not worth holding."""


@functools.lru_cache(maxsize=1024)
def _render_cached(template: str, results: tuple[str, ...], last: tuple[str, ...]) -> str:
    return _render(template, results, last)


def _render(template: str, results: Sequence[str], last: Sequence[str]) -> str:
    quoted = "; ".join(f'"{result}"' for result in results)
    try:
        return _FORMATTER.format(template, results=quoted, last=list(last))
    except (ValueError, IndexError):
        return template
