"""A Gemini request body as the fake reads it: the parts and contents that survive proto conversion
(`_proto`), the parsed request, and the `Rejection` every check raises. Data only: touches nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ...messages._types import Tool
from .._base import Rule

__all__ = ["ParsedRequest", "Rejection", "WireContent", "WirePart"]


class Rejection(Exception):
    """A request the real API refuses with 400 INVALID_ARGUMENT and this exact message."""

    def __init__(
        self,
        message: str,
        rule: Rule = Rule.MALFORMED,
        *,
        content: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.rule = rule
        self.content = content
        """The `contents` index that broke the rule, when one did."""
        self.field = field
        """For proto conversion errors: the field path the body's `fieldViolations` name ('' = top level)."""


@dataclass(slots=True)
class WirePart:
    kind: Literal["text", "call", "response", "other", "empty"]
    """`other` is data the neutral model has no place for (images, code); `empty` sets no data at all."""
    text: str = ""
    name: str = ""
    payload: Mapping[str, Any] = field(default_factory=dict)
    """A call's `args` or a function response's `response`."""
    thought: bool = False
    signature: str | None = None


@dataclass(slots=True)
class WireContent:
    role: str
    parts: list[WirePart]

    def count(self, kind: str) -> int:
        return sum(1 for part in self.parts if part.kind == kind)

    @property
    def effective_role(self) -> str:
        """The role is optional on the wire; an unnamed content is the model's if it calls functions."""
        if self.role:
            return self.role
        return "model" if self.count("call") else "user"


@dataclass(slots=True)
class ParsedRequest:
    contents: list[WireContent]
    system: WireContent | None
    tools: list[Tool]
    tool_paths: list[str]
    """Where each tool's declaration sits (`tools[0].function_declarations[1]`)."""
    tool_choice: str | None
    model: str | None
    raw: dict[str, Any]

    @property
    def system_texts(self) -> list[str]:
        return [part.text for part in self.system.parts if part.kind == "text"] if self.system else []
