"""How the fake Gemini checks a `generateContent` body: JSON, proto field checks, then the turn rules.

Google's front end converts the JSON body to a protobuf before the model backend sees it, so a
request fails in three layers, checked here in the same order:

1. JSON and proto3-JSON conversion (`Invalid JSON payload received. ...`, `Invalid value at ...`):
   the first problem wins. That layer lives in `_jsontext` (the text) and `_proto` (the conversion).
2. Field validation (`* GenerateContentRequest.<path>: ...\\n`): every violation is listed, one per
   line, as the real API does.
3. The backend's turn rules (reference B.6: G1, G2, G3 and the role check), walking `contents`.

Touches only the request; nothing here knows about the neutral model's message indexes: a
`Rejection` names the offending `contents` index and `_parse` turns it into a `ErrorResponse`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ...messages._types import Tool
from .._base import Rule
from ._body import ParsedRequest, Rejection, WireContent
from ._jsontext import load_json
from ._proto import (
    TOP_LEVEL_NAMES,
    get_field,
    invalid_value,
    read_content,
    read_declarations,
    read_message,
    read_repeated,
    read_string,
    read_tool_choice,
    unknown_name,
)

__all__ = ["G1", "G2", "G3", "MIXED", "ROLE", "check_fields", "check_order", "merge_model_runs", "read_request"]

G1 = "Please ensure that function call turn comes immediately after a user turn or after a function response turn."
G2 = "Please ensure that function response turn comes immediately after a function call turn."
G3 = (
    "Please ensure that the number of function response parts is equal to the number of function call "
    "parts of the function call turn."
)
ROLE = "Please use a valid role: user, model."
MIXED = (  # googleapis/python-genai#81, verbatim
    "Please ensure that function call turn contains at least one function_call part which can not be "
    "mixed with function_response parts."
)
_BAD_FUNCTION_NAME = (
    "Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, "
    "0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 64."
)
_FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}")


def read_request(body: bytes) -> ParsedRequest:
    """Layer 1: the body as typed wire contents, or the `Rejection` the real API sends."""
    data = load_json(body)
    for key in data:
        if key not in TOP_LEVEL_NAMES:
            raise unknown_name(key, "", "Cannot find field.")
    contents = [read_content(item, path) for path, item in read_repeated(data, "contents", "", "Content")]
    for content in contents:
        if content.role == "function":
            # Function responses under role "function", as Google's REST function-calling quickstart
            # sends them to v1beta (google-gemini/cookbook, quickstarts/rest/Function_calling_REST.ipynb)
            # and semantic-kernel's Google connector does: the API reads them as the user's turn.
            content.role = "user"
    system = read_message(data, "systemInstruction", "", "Content")
    declarations = read_declarations(data)
    tool_choice = read_tool_choice(data)
    _generation_config(data)
    model = read_string(data, "model", "")
    return ParsedRequest(
        contents=contents,
        system=read_content(system, "system_instruction") if system is not None else None,
        tools=[
            Tool(name=name, description=description, parameters=schema) for _, name, description, schema in declarations
        ],
        tool_paths=[path for path, _, _, _ in declarations],
        tool_choice=tool_choice,
        model=model.removeprefix("models/") if model else None,
        raw=data,
    )


_FLOAT_MAX = 3.4028234663852886e38
"""The largest finite 32-bit float: `temperature` is a proto `float`, so anything larger cannot be stored."""


def _generation_config(data: Mapping[str, Any]) -> None:
    """`generationConfig.temperature`, the one sampling field a tool loop sets: a proto `float`, and
    (like every Gemini model) only from 0 to 2. A 4,000-digit number parses as infinity, which a
    `float` cannot hold, so it is refused rather than answered as if it were a temperature."""
    config = read_message(data, "generationConfig", "", "GenerationConfig")
    if config is None:
        return
    _, value = get_field(config, "temperature")
    if value is None:
        return
    path = "generation_config.temperature"
    number = _float(value)
    if number is None or not abs(number) <= _FLOAT_MAX:
        raise invalid_value(path, "TYPE_FLOAT", value)
    if not 0 <= number < 2.0001:
        # [INF] Vertex AI's wording; its range clause is confirmed by a public capture of a 400 for
        # temperature 3.0 and -1.0 on gemini-3.7-flash (cuioss pr-agent-settings landing record, 2026).
        raise Rejection(
            f"Unable to submit request because it has a temperature value of {number:g} but the supported "
            "range is from 0 (inclusive) to 2.0001 (exclusive). Update the value and try again.",
            field=path,
        )


def _float(value: Any) -> float | None:
    """protobuf's JSON reading of a float field: a number, or a string holding one; never a bool."""
    if isinstance(value, bool):
        return None
    if not isinstance(value, (int, float, str)):
        return None
    try:
        return float(value)
    except (ValueError, OverflowError):  # not a number, or an integer past a double's range
        return None


def check_fields(parsed: ParsedRequest) -> None:
    """Layer 2: every `* GenerateContentRequest...` violation at once, one line each, like the real API."""
    lines: list[tuple[str, int | None]] = []
    if not parsed.contents:
        lines.append(("contents: contents is not specified", None))
    for index, content in enumerate(parsed.contents):
        path = f"contents[{index}]"
        if not content.parts:
            lines.append((f"{path}.parts: contents.parts must not be empty.", index))
        lines.extend((line, index) for line in _part_violations(content, path))
    if parsed.system is not None:
        lines.extend((line, None) for line in _part_violations(parsed.system, "system_instruction"))
    for path, tool in zip(parsed.tool_paths, parsed.tools, strict=True):
        if not _FUNCTION_NAME.fullmatch(tool.name):
            lines.append((f"{path}.name: {_BAD_FUNCTION_NAME}", None))
    if lines:
        message = "".join(f"* GenerateContentRequest.{line}\n" for line, _ in lines)
        raise Rejection(message, content=lines[0][1])


def merge_model_runs(contents: list[WireContent]) -> tuple[list[WireContent], list[int]]:
    """Adjacent `model` contents as the one model turn the API reads them as, and for each turn the
    index of its first content.

    google-genai's automatic function calling, streaming, appends every streamed chunk as a content of
    its own (`contents.extend(model_output)` in `models.py` `generate_content_stream`, python-genai 3.6;
    the JS SDK does the same), so its next request holds a run of `model` contents ending in the
    `functionCall` one: the official SDKs' own loop works only because the API takes a run of model
    contents as one turn. Adjacent `user` contents stay apart: the function responses must sit in the
    one content right after the calls (a separate content per response gets the G3 error,
    agentjido/req_llm#525), while plain text after them is accepted (langchain-ai/langchainjs#11477,
    checked against the live API)."""
    merged: list[WireContent] = []
    starts: list[int] = []
    for index, content in enumerate(contents):
        if merged and content.effective_role == "model" and merged[-1].effective_role == "model":
            merged[-1] = WireContent("model", [*merged[-1].parts, *content.parts])
            continue
        merged.append(content)
        starts.append(index)
    return merged, starts


def check_order(contents: list[WireContent]) -> None:
    """Layer 3: reference B.6's walk over `contents`; the first violation wins."""
    for index, content in enumerate(contents):
        if content.role not in ("user", "model", ""):
            raise Rejection(ROLE, content=index)
        calls, responses = content.count("call"), content.count("response")
        previous = contents[index - 1] if index else None
        expected = previous.count("call") if previous is not None else 0
        if calls and responses:
            raise Rejection(MIXED, Rule.RESULT_WITHOUT_TURN, content=index)
        if calls and (previous is None or previous.effective_role != "user"):
            # Two call turns in a row leave the first one's calls unanswered; a history that starts
            # with a call turn is an ordering the rule kinds have no better name for.
            raise Rejection(G1, Rule.MISSING_RESULT if expected else Rule.MALFORMED, content=index)
        if responses and not expected:
            raise Rejection(G2, Rule.RESULT_WITHOUT_TURN, content=index)
        if responses and responses != expected:
            rule = Rule.MISSING_RESULT if responses < expected else Rule.DUPLICATE_RESULT
            raise Rejection(G3, rule, content=index)
        if expected and not calls and not responses and content.effective_role == "user":
            # Reference rule 6 [INF]: a call turn answered by plain user text; most likely 0 != N.
            raise Rejection(G3, Rule.MISSING_RESULT, content=index)


# -- layer 2: field validation helpers ---------------------------------------------------------------


def _part_violations(content: WireContent, path: str) -> list[str]:
    lines = []
    for index, part in enumerate(content.parts):
        where = f"{path}.parts[{index}]"
        if part.kind == "empty":
            lines.append(f"{where}.data: required oneof field 'data' must have one initialized field")
        elif part.kind in ("call", "response") and not part.name:
            # Verbatim for function_response; function_call by analogy [INF].
            kind = "function_call" if part.kind == "call" else "function_response"
            lines.append(f"{where}.{kind}.name: Name cannot be empty.")
    return lines
