"""A `generateContent` request of the shapes SDKs and frameworks send, read in one walk: what
`_parse.parse_request` makes of it (the JSON and proto layer of `_jsontext` and `_proto`, the field
checks and turn rules of `_validate`, the neutral model), or None for anything this walk does not
verify whole itself.

Why: the full reading goes through a `WirePart` per part, a `WireContent` per content, the proto
reader's path strings and snake_case lookups for every field, then three more walks (the field
checks, the merged turns' rules, the neutral model); the walk here builds the neutral objects straight
from the decoded JSON. Like the full reader, it reads only the fields that reader reads (a content's
`role` and `parts`, a declaration's name, description and schemas, ...) and passes over the others
(google-genai's `response_json_schema`, a `googleSearch` tool); a part or the body itself must hold
nothing else. It never words an error: on anything unusual (an unknown key in a part or the body, a
value protobuf would convert such as `"thought": "true"`, an image part, a thought in a user turn,
any rule broken) it declines, and the caller reads the request the full way, which stays the one source
of every error text. Touches only the request bytes; raises nothing.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from ...messages._types import Message, Part, Tool, wire_call
from .._base import Conversation
from .._json import orjson_read
from .._walked import plain_name, result_message, text_message, text_part, walked_message, walked_request, walked_tool
from ._jsontext import _MAX_DEPTH, _too_deep
from ._parse import _pair, _result
from ._proto import _MODES, TOP_LEVEL_NAMES, _lower_types
from ._reasoning import wire_reasoning
from ._validate import _FUNCTION_NAME

__all__ = ["fast_request"]

_PART_KEYS = frozenset({"text", "functionCall", "function_call", "thought", "thoughtSignature", "thought_signature"})
"""The keys of a model turn's part this walk reads (a function response there is the full path's)."""
_TEMPERATURE_END = 2.0001
_PATHS = tuple(f"contents[{index}]" for index in range(64))
_MAX_NAME = 64
"""`_validate._FUNCTION_NAME`'s length limit."""


def fast_request(body: bytes, *, path_model: str | None, path_stream: bool) -> Conversation | None:
    """`_parse.parse_request(...)` for a request the full path accepts, read in one walk; None to decline."""
    read = orjson_read(body, _MAX_DEPTH)
    if read is None:  # not UTF-8, not JSON, NaN, a lone surrogate, too deep: the full path's to word
        return None
    data, opened = read  # orjson refuses lone surrogates: only nesting is left of `tree_problem`
    if type(data) is not dict or (opened > _MAX_DEPTH and _too_deep(data)):
        return None
    contents, model = data.get("contents"), data.get("model")
    if type(contents) is not list or not contents or not data.keys() <= TOP_LEVEL_NAMES:
        return None
    if model is not None and type(model) is not str:
        return None
    system = _field(data, "systemInstruction", "system_instruction")
    texts = _system(system) if system is not None else []
    declared = data.get("tools")
    tools = _tools(declared) if declared is not None else []
    config = _field(data, "toolConfig", "tool_config")
    choice = _tool_choice(config) if config is not None else None
    generation = _field(data, "generationConfig", "generation_config")
    if texts is None or tools is None or (config is not None and choice is None):
        return None
    if generation is not None and (type(generation) is not dict or not _temperature_ok(generation.get("temperature"))):
        return None
    messages: list[Message] = []
    paths: list[str] = []
    if texts:
        messages.append(walked_message("system", tuple(text_part(part) for part in texts)))
        paths.append("systemInstruction")
    if not _contents(contents, messages, paths):
        return None
    return walked_request(
        path_model or (model.removeprefix("models/") if model else None) or "",
        messages,
        paths,
        tools,
        choice,
        path_stream,
        data,
    )


def _field(obj: dict[str, Any], name: str, snake: str) -> Any:
    """`_proto.get_field`'s value: the lowerCamel spelling unless null, else the snake_case one."""
    value = obj.get(name)
    return obj.get(snake) if value is None else value


def _temperature_ok(value: Any) -> bool:
    """`_validate._generation_config` passes: no temperature, or a number from 0 to 2 as a proto float."""
    if value is None:
        return True
    return (type(value) is float or type(value) is int) and 0 <= value < _TEMPERATURE_END


def _system(value: Any) -> list[str] | None:
    """A `systemInstruction` of plain text parts (its role, if any, a string: the full path reads no more)."""
    if type(value) is not dict:
        return None
    role, parts = value.get("role"), value.get("parts")
    if (role is not None and type(role) is not str) or type(parts) is not list or not parts:
        return None
    texts = []
    for part in parts:
        if type(part) is not dict or len(part) != 1:
            return None
        text = part.get("text")
        if type(text) is not str or not text:
            return None
        texts.append(text)
    return texts


def _tools(value: Any) -> list[Tool] | None:
    """Function declarations, each named as `check_fields` requires, with a JSON Schema or a Schema."""
    if type(value) is not list:
        return None
    tools: list[Tool] = []
    for tool in value:
        if type(tool) is not dict:
            return None
        declarations = tool.get("functionDeclarations")  # `_field`, inline: every request with tools
        if declarations is None:
            declarations = tool.get("function_declarations")
            if declarations is None:
                continue
        if type(declarations) is not list:
            return None
        for declaration in declarations:
            if type(declaration) is not dict:
                return None
            name, description = declaration.get("name"), declaration.get("description")
            parameters = declaration.get("parameters")
            json_schema = _field(declaration, "parametersJsonSchema", "parameters_json_schema")
            if type(name) is not str or not (plain_name(name, _MAX_NAME) or _FUNCTION_NAME.fullmatch(name)):
                return None
            if description is not None and type(description) is not str:
                return None
            if (parameters is not None and type(parameters) is not dict) or (
                json_schema is not None and type(json_schema) is not dict
            ):
                return None
            schema = json_schema if json_schema is not None else _lower_types(parameters) if parameters else None
            if not schema:  # none, or an empty one: `read_declarations` gives the empty object schema
                schema = {"type": "object", "properties": {}}
            tools.append(walked_tool(name, description or "", schema))
    return tools


def _tool_choice(value: Any) -> str | None:
    """`toolConfig.functionCallingConfig` as `_proto.read_tool_choice` reads it, from its plain spellings."""
    if type(value) is not dict:
        return None
    calling = _field(value, "functionCallingConfig", "function_calling_config")
    if calling is None:
        return "auto"
    if type(calling) is not dict:
        return None
    mode, allowed = calling.get("mode"), _field(calling, "allowedFunctionNames", "allowed_function_names")
    if allowed is None:
        allowed = []
    elif type(allowed) is not list or not all(type(name) is str for name in allowed):
        return None
    if mode is None:
        mode = _MODES[0]
    elif type(mode) is str and mode.upper() in _MODES:
        mode = mode.upper()
    elif type(mode) is int and 0 <= mode < len(_MODES):
        mode = _MODES[mode]
    else:
        return None
    if mode == "NONE":
        return "none"
    if mode == "ANY":
        return str(allowed[0]) if len(allowed) == 1 else "required"
    return "auto"


def _signature_ok(value: Any) -> bool:
    """A non-empty `thoughtSignature` that `_proto._bytes` decodes (either base64 alphabet, any padding)."""
    if type(value) is not str or not value:
        return False
    standard = value.replace("-", "+").replace("_", "/")
    try:
        base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _contents(contents: list[Any], messages: list[Message], paths: list[str]) -> bool:
    """`contents` into `messages` and `paths` as `_parse.to_neutral` puts them; False if any content,
    part or rule is not one this walk verifies.

    The turn rules of `_validate.check_order` on runs of model contents merged into one turn (as
    `merge_model_runs` merges them): a call turn comes right after a user turn, and the user turn
    after it holds exactly as many function responses; no other user turn holds any."""
    turn = -1  # the merged turn of the content being read
    role_now = ""
    start = 0  # where the current model run began
    called: list[str] = []  # the current model turn's call names, then the previous one's
    pending: list[tuple[Part, ...]] = []  # the current model turn's parts, message by message
    for index, content in enumerate(contents):
        if type(content) is not dict:
            return False
        role, parts = content.get("role"), content.get("parts")
        if type(parts) is not list or not parts:
            return False
        if role is None or role == "":
            role = _effective_role(parts)
        if role == "model":
            if role_now != "model":
                if role_now != "user":
                    return False  # a model turn first: only a call turn is refused, but the rule is left whole
                turn, start, role_now, called, pending = turn + 1, index, "model", [], []
            read = _model_parts(parts, turn, called)
            if read is None:
                return False
            pending.append(read)
            continue
        if role != "user":
            return False
        if role_now == "model":
            _model_turn(pending, start, index, messages, paths)
        turn += 1
        if not _user_turn(parts, turn, called if role_now == "model" else [], messages, paths, index):
            return False
        role_now, called = "user", []
    if role_now == "model":
        _model_turn(pending, start, len(contents), messages, paths)
    return True


def _effective_role(parts: list[Any]) -> str:
    """`WireContent.effective_role` of a content without a role: the model's if it calls a function."""
    calls = (type(part) is dict and _field(part, "functionCall", "function_call") is not None for part in parts)
    return "model" if any(calls) else "user"


def _model_turn(
    pending: list[tuple[Part, ...]], start: int, end: int, messages: list[Message], paths: list[str]
) -> None:
    """A run of model contents, `contents[start:end]`, as its one assistant message."""
    parts = pending[0] if len(pending) == 1 else tuple(part for read in pending for part in read)
    messages.append(walked_message("assistant", parts))
    paths.append(_PATHS[start] if end - start == 1 and start < len(_PATHS) else _path(start, end))


def _path(start: int, end: int) -> str:
    return f"contents[{start}]" if end - start == 1 else f"contents[{start}..{end - 1}]"


def _model_parts(parts: list[Any], turn: int, called: list[str]) -> tuple[Part, ...] | None:
    """A model content's parts: text, calls (named in `called`), thoughts and signatures; no responses."""
    read: list[Part] = []
    for part in parts:
        if type(part) is not dict:
            return None
        if len(part) == 1:
            text = part.get("text")
            if type(text) is str and text:
                read.append(text_part(text))
                continue
            call = part.get("functionCall")  # `_field`, inline: every call part of a history
            if call is None:
                call = part.get("function_call")
                if call is None:
                    return None
        elif not part.keys() <= _PART_KEYS:
            return None
        else:
            text, camel, snake = part.get("text"), part.get("functionCall"), part.get("function_call")
            if (text is not None) + (camel is not None) + (snake is not None) != 1:
                return None  # exactly one of the `data` oneof's fields
            call = snake if camel is None else camel
            thought, signature = part.get("thought"), _field(part, "thoughtSignature", "thought_signature")
            if thought is not None and type(thought) is not bool:
                return None
            if signature is not None and not _signature_ok(signature):
                return None
            if text is not None:
                if type(text) is not str or not text:
                    return None
                if thought:
                    reasoning = wire_reasoning(
                        {"text": text, "thought": True, "thoughtSignature": signature}
                        if signature
                        else {"text": text, "thought": True}
                    )
                else:
                    reasoning = wire_reasoning({"thoughtSignature": signature}) if signature else None
                if reasoning is not None:
                    read.append(reasoning)
                if not thought:
                    read.append(text_part(text))
                continue
            if signature:
                reasoning = wire_reasoning({"thoughtSignature": signature})
                if reasoning is not None:
                    read.append(reasoning)
        if type(call) is not dict:
            return None
        name, arguments, call_id = call.get("name"), call.get("args"), call.get("id")
        if type(name) is not str or not name or (call_id is not None and type(call_id) is not str):
            return None
        if arguments is None:
            arguments = {}
        elif type(arguments) is not dict:
            return None
        read.append(wire_call(f"gemini:{turn}:{len(called)}", name, dict(arguments)))
        called.append(name)
    return tuple(read)


def _user_turn(
    parts: list[Any], turn: int, called: list[str], messages: list[Message], paths: list[str], index: int
) -> bool:
    """A user content: its function responses (as many as the turn before made calls) as tool
    messages, paired by `_parse._pair`, then its text as a user message."""
    path = _PATHS[index] if index < len(_PATHS) else f"contents[{index}]"
    if not called and len(parts) == 1:  # a question: one text part after no calls, read without the lists
        part = parts[0]
        text = part.get("text") if type(part) is dict and len(part) == 1 else None
        if type(text) is str and text:
            messages.append(text_message("user", text))
            paths.append(path)
            return True
    texts: list[str] = []
    names: list[str] = []
    payloads: list[dict[str, Any]] = []
    for part in parts:
        if type(part) is not dict or len(part) != 1:
            return False
        text = part.get("text")
        if text is not None:
            if type(text) is not str or not text:
                return False
            texts.append(text)
            continue
        response = part.get("functionResponse")  # `_field`, inline: every response part of a history
        if response is None:
            response = part.get("function_response")
        if type(response) is not dict:
            return False
        name, payload, call_id = response.get("name"), response.get("response"), response.get("id")
        if type(name) is not str or not name or (call_id is not None and type(call_id) is not str):
            return False
        if payload is None:
            payload = {}
        elif type(payload) is not dict:
            return False
        names.append(name)
        payloads.append(payload)
    if len(names) != len(called):
        return False  # G2/G3: a response turn answers the call turn before it, one response a call
    if names:
        ids = _pair(turn - 1, called, names) if names != called else None  # None: each answers its position
        for position, payload in enumerate(payloads):
            call_id = f"gemini:{turn - 1}:{position}" if ids is None else ids[position]
            value = payload.get("result") if len(payload) == 1 else None
            # `_parse._result` of the envelope nearly every client sends, `{"result": "<text>"}`
            if type(value) is str:
                messages.append(result_message(call_id, value, False))
            else:
                messages.append(walked_message("tool", (_result(call_id, payload),)))
            paths.append(path)
    if len(texts) == 1:
        messages.append(text_message("user", texts[0]))
        paths.append(path)
    elif texts or not names:
        messages.append(walked_message("user", tuple(text_part(text) for text in texts)))
        paths.append(path)
    return True
