"""Structured output: a step's `output` as each wire format carries it, checked against the schema the
request asks for.

Where the request asks for JSON, and what the answer carries:

- Chat Completions: `response_format: {"type": "json_schema", "json_schema": {"schema": ...}}` (or
  `json_object`, no schema): the message's content is the JSON text;
- Responses: `text: {"format": {"type": "json_schema", "schema": ...}}`: the output text is the JSON;
- Gemini: `generationConfig.responseJsonSchema`, or `responseSchema` (the OpenAPI subset, upper-case
  types): the text part is the JSON;
- Anthropic: `output_config: {"format": {"type": "json_schema", "schema": ...}}`: the text block is the
  JSON; or a tool forced by `tool_choice: {"type": "tool", "name": ...}` (the tool-as-schema idiom):
  a `tool_use` block of that tool whose `input` is the answer, checked against its `input_schema`.

A request that asks for none of these gets the JSON text. A step's `output` that does not fit the
schema is the sandbox's 400, naming the field (`_schema.mismatch`). Text steps are sent as written.

May touch: the request's neutral conversation (its `raw` body, its tools); it keeps no state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..messages._types import Part, Text, ToolCall
from ..wire import Conversation, Rule, WireFormat
from ._refusals import printable
from ._scenario import Scenario, Step
from ._schema import mismatch

__all__ = ["structured_echo", "structured_parts"]

_UNSET = object()


@dataclass(frozen=True)
class _Asked:
    """The schema a request asks its answer to fit."""

    schema: Any
    """None: JSON with no schema (`json_object`)."""
    where: str
    """The request field the schema sits in, as an error names it."""
    tool: str | None = None
    """Anthropic's tool-as-schema: the forced tool whose input is the answer."""


def structured_parts(
    wire: WireFormat, scenario: Scenario, step: Step, step_number: int, conversation: Conversation
) -> list[Part]:
    """The parts of the answer `step.output` makes for this request; raises the sandbox's 400 when the
    output does not fit the request's schema."""
    asked = _asked(wire, conversation)
    if asked is not None:
        problem = mismatch(step.output, asked.schema) if asked.schema is not None else None
        if problem is None and asked.tool is not None and not isinstance(step.output, Mapping):
            problem = mismatch(step.output, {"type": "object"})
        if problem is not None:
            raise wire.error(
                400,
                printable(
                    f"sandbox: the structured answer of scenario {scenario.name!r} (model turn {step_number}) does "
                    f"not fit the schema the request sends in {asked.where}: {problem}. Make the step's output "
                    "match the schema your code sends (or the schema match what your code expects back)."
                ),
                rule=Rule.SCHEMA_MISMATCH,
                param=asked.where,
                code="sandbox_schema_mismatch",
            )
    if asked is not None and asked.tool is not None:
        return [ToolCall(_call_id(wire, scenario, step_number), asked.tool, dict(step.output))]
    return [Text(json.dumps(step.output, ensure_ascii=False, separators=(",", ":")))]


def structured_echo(
    wire: WireFormat, scenario: Scenario, step: Step, step_number: int, echoed: Sequence[ToolCall]
) -> list[ToolCall]:
    """The calls an echoed structured answer holds: the one tool-as-schema call (Anthropic) when it
    came back as one, otherwise none."""
    if wire.name != "anthropic" or len(echoed) != 1 or not isinstance(step.output, Mapping):
        return []
    return [ToolCall(_call_id(wire, scenario, step_number), echoed[0].name, dict(step.output))]


def _call_id(wire: WireFormat, scenario: Scenario, step_number: int) -> str:
    return wire.call_id(f"{scenario.name}/{step_number}/0")


def _asked(wire: WireFormat, conversation: Conversation) -> _Asked | None:
    """Where each SDK's parsing helper puts the schema: openai 3.63 `chat.completions.parse` in
    `response_format.json_schema.schema` and `responses.parse` in `text.format.schema`
    (`openai/lib/_parsing/`); anthropic 2.17 `messages.parse(output_format=...)` in
    `output_config.format.schema` (`resources/messages/messages.py`); google-genai 3.6
    `response_schema=Model` in `generationConfig.responseSchema`, upper-case types, and
    `response_json_schema` in `responseJsonSchema`."""
    raw = conversation.raw
    if wire.name == "openai":
        return _format(raw.get("response_format"), "response_format", nested=True)
    if wire.name == "openai-responses":
        text = raw.get("text")
        return _format(text.get("format"), "text.format", nested=False) if isinstance(text, Mapping) else None
    if wire.name == "gemini":
        return _gemini(raw)
    config = raw.get("output_config")
    if isinstance(config, Mapping) and isinstance(config.get("format"), Mapping):
        return _format(config["format"], "output_config.format", nested=False)
    if conversation.forced_tool_choice and conversation.tool_choice != "required":
        for index, tool in enumerate(conversation.tools):
            if tool.name == conversation.tool_choice:
                return _Asked(dict(tool.parameters), f"tools[{index}].input_schema", tool.name)
    return None


def _format(value: Any, where: str, *, nested: bool) -> _Asked | None:
    """Chat's `response_format` (the schema under `json_schema`), Responses' and Anthropic's format."""
    if not isinstance(value, Mapping):
        return None
    if value.get("type") == "json_object":
        return _Asked(None, where)
    if value.get("type") != "json_schema":
        return None
    holder = value.get("json_schema") if nested else value
    if not isinstance(holder, Mapping):
        return None
    return _Asked(holder.get("schema"), f"{where}.json_schema.schema" if nested else f"{where}.schema")


def _gemini(raw: Mapping[str, Any]) -> _Asked | None:
    """`generationConfig`'s JSON Schema or OpenAPI schema, in either spelling the API accepts."""
    config = _either(raw, "generationConfig", "generation_config")
    if not isinstance(config, Mapping):
        return None
    for camel, snake in (("responseJsonSchema", "response_json_schema"), ("responseSchema", "response_schema")):
        schema = _either(config, camel, snake)
        if schema is not _UNSET:
            return _Asked(schema, f"generationConfig.{camel}")
    mime = _either(config, "responseMimeType", "response_mime_type")
    return _Asked(None, "generationConfig.responseMimeType") if mime == "application/json" else None


def _either(data: Mapping[str, Any], camel: str, snake: str) -> Any:
    value = data.get(camel, data.get(snake, _UNSET))
    return _UNSET if value is None else value
