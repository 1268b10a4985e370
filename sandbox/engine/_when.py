"""Steps chosen by content: a step's `when`, and what of a request it reads.

`Step(when=When(user="cancel"))` plays only for a request whose last user message contains "cancel".
A `When` reads four things of the request, as it stood when the model was asked for that turn:

- `user`: the text of the last user message;
- `tool_result`: any tool result sent since the model's last turn;
- `system`: the system prompt (Chat's system and developer messages, Responses' `instructions`,
  Anthropic's `system`, Gemini's `systemInstruction`);
- `tool`: the name of any tool the request declares.

A string matches when the text contains it, ignoring case; a compiled `re.Pattern` when its `search`
finds it (its own flags). Every field given must match. In Python, `when` may also be a predicate: a
function of the request's `Conversation` (its `messages` up to that turn, its `tools`) returning True
or False. In TOML, `when = { user = "cancel" }`, and a regular expression is `{ regex = "..." }`.

May touch: the conversation it is handed; it keeps no state.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Union

from .._exceptions import ScenarioError
from ..messages._types import ToolResult
from ..wire import Conversation

__all__ = ["Condition", "PredicateFailed", "When", "describe", "matches", "when_from_dict"]

Pattern = Union[str, "re.Pattern[str]"]


@dataclass(frozen=True, kw_only=True)
class When:
    """What a request must hold for a step to play: each field given must match (see the module)."""

    user: Pattern | None = None
    """The last user message's text."""
    tool_result: Pattern | None = None
    """A tool result sent since the model's last turn."""
    system: Pattern | None = None
    """The system prompt."""
    tool: Pattern | None = None
    """The name of a tool the request declares."""

    def __post_init__(self) -> None:
        given = {item.name: getattr(self, item.name) for item in fields(self) if getattr(self, item.name) is not None}
        if not given:
            raise ScenarioError(
                "When() needs at least one of user=, tool_result=, system=, tool= (a string it contains, "
                "or a re.compile(...) pattern it matches)."
            )
        for name, value in given.items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                continue
            if not isinstance(value, str) or not value:
                raise ScenarioError(
                    f"When({name}={value!r}): give a non-empty string (matched as a substring, ignoring case) "
                    "or a re.compile(...) pattern."
                )

    def __str__(self) -> str:
        parts = []
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, str):
                parts.append(f"{item.name} contains {value!r}")
            elif value is not None:
                parts.append(f"{item.name} matches /{value.pattern}/")
        return " and ".join(parts)


Condition = When | Callable[[Conversation], bool]
"""What a step's `when` takes: a `When`, or a predicate of the request's conversation."""


class PredicateFailed(Exception):
    """A `when` predicate raised or returned something other than True or False."""


def matches(condition: Condition, conversation: Conversation) -> bool:
    """Whether the request (its messages up to the turn asked for) meets `condition`."""
    if not isinstance(condition, When):
        try:
            verdict = condition(conversation)
        except Exception as exc:  # noqa: BLE001 - the engineer's predicate: its failure is reported, never raised
            raise PredicateFailed(f"raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(verdict, bool):
            raise PredicateFailed(f"returned {verdict!r:.80}; a predicate returns True or False")
        return verdict
    messages = conversation.messages
    if condition.user is not None:
        last = next((message for message in reversed(messages) if message.role == "user"), None)
        if last is None or not _found(condition.user, last.text()):
            return False
    if condition.system is not None:
        system = "\n".join(message.text() for message in messages if message.role == "system")
        if not _found(condition.system, system):
            return False
    if condition.tool_result is not None:
        results: list[str] = []
        for message in reversed(messages):
            if message.role == "assistant":
                break
            results.extend(part.content for part in message.content if isinstance(part, ToolResult))
        if not any(_found(condition.tool_result, result) for result in results):
            return False
    return condition.tool is None or any(_found(condition.tool, tool.name) for tool in conversation.tools)


def describe(condition: Condition | None) -> str:
    """The condition as an error lists it."""
    if condition is None:
        return "(none)"
    if isinstance(condition, When):
        return str(condition)
    return f"predicate {getattr(condition, '__qualname__', type(condition).__name__)}()"


def _found(pattern: Pattern, text: str) -> bool:
    if isinstance(pattern, str):
        return pattern.casefold() in text.casefold()
    return pattern.search(text) is not None


def when_from_dict(raw: Any, where: str) -> When:
    """A `When` from its TOML table: `{ user = "cancel" }`, `{ tool_result = { regex = "^ok" } }`."""
    if not isinstance(raw, Mapping):
        raise ScenarioError(f'{where}: when must be a table such as {{ user = "cancel" }}, got {raw!r}.')
    names = [item.name for item in fields(When)]
    unknown = sorted(set(raw) - set(names))
    if unknown:
        raise ScenarioError(f"{where}: when has unknown keys {unknown}; use {', '.join(names)}.")
    values: dict[str, Pattern] = {}
    for name, value in raw.items():
        if isinstance(value, Mapping):
            if set(value) != {"regex"} or not isinstance(value["regex"], str):
                raise ScenarioError(f'{where}: when.{name} = {value!r}; a regular expression is {{ regex = "..." }}.')
            try:
                values[name] = re.compile(value["regex"])
            except re.error as exc:
                raise ScenarioError(f"{where}: when.{name}.regex {value['regex']!r} is not valid: {exc}.") from None
        else:
            values[name] = value
    try:
        return When(**values)
    except ScenarioError as exc:
        raise ScenarioError(f"{where}: {exc}") from None
