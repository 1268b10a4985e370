"""One walk over a decoded Responses body in the shapes SDKs and frameworks send, checking what
`_parse._Parser.run` checks and leaving the parser as `run` leaves it: its turns, calls, outputs and
item ids (what kept state's `walk_answer` goes on from), and the neutral conversation.

Why: the full walk costs a function call, an f-string path and an error branch per field; this one a
type test. It never decides that a body is wrong: whatever it does not verify itself (an item type or
part it does not know, a value of an unusual type, a broken rule, stored state named) makes it
decline, and the full walk then reads the body from the start and says what is wrong, so every error
text has one source (`_validate`). `fast_item` does the same for one item: it changes the parser only
when it vouches for the item, so the caller can hand a declined item to `_Parser._check_item`.
Touches only the decoded body and the parser it is handed; builds no error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeGuard

from ...messages._types import Part, Reasoning, Role, Tool, assembled, wire_call, wire_result, wire_text
from .._base import Conversation
from .._openai import call_arguments
from ._chain import Ref, Turn
from ._validate import _CALL_ID_MAX, _TOOL_CHOICES, _TOOL_NAME, _TOOL_NAME_MAX, KNOWN_PARAMETERS, MIN_OUTPUT_TOKENS

if TYPE_CHECKING:
    from ._parse import _Parser

__all__ = ["fast_item", "fast_run"]

_ANY: tuple[type, ...] = ()
_KNOWN: dict[str, tuple[type, ...]] = {key: _ANY for key in KNOWN_PARAMETERS} | {
    "temperature": (int, float),
    "parallel_tool_calls": (bool,),
    "stream": (bool,),
    "background": (bool,),
    "max_output_tokens": (int,),
    "instructions": (str,),
    "store": (bool,),
}
"""Every parameter the API knows, with the exact types `_validate.SCALARS` allows the plain ones (a
decoded body holds no subclasses; JSON true is not a number); the others are checked on their own."""
_NEUTRAL: dict[str, Role] = {"assistant": "assistant", "system": "system", "developer": "system", "user": "user"}
_INPUT_TEXT = {"input_text": "text"}
_OUTPUT_TEXT = {"output_text": "text", "refusal": "refusal"}
_NO_TEXT = frozenset(("input_image", "input_file", "input_audio", "scoped_content"))
"""Parts of a user, system or developer message the neutral model leaves out."""
_PATHS = tuple(f"input[{index}]" for index in range(64))
_new = object.__new__


def fast_run(parser: _Parser) -> Conversation | None:
    """`parser.run()` for a request in the common shapes, or None (the parser is then spent: walk a
    fresh one with `run`)."""
    data = parser.data
    model = data.get("model")
    if type(model) is not str or not model or "input" not in data:
        return None
    for key, value in data.items():
        kinds = _KNOWN.get(key)
        if kinds is None or kinds and value is not None and type(value) not in kinds:
            return None
    tokens = data.get("max_output_tokens")
    if tokens is not None and tokens < MIN_OUTPUT_TOKENS:
        return None
    if data.get("previous_response_id") is not None or data.get("conversation") is not None:
        return None
    choice = data.get("tool_choice")
    if choice is not None:
        choice = _tool_choice(choice)
        if choice is None:
            return None
    tools = _tools(data.get("tools"))
    if tools is None:
        return None
    sent = data["input"]
    if type(sent) is str:
        if sent:
            _turn(parser, "user", -1).parts.append(wire_text(sent))
        elif not parser.chain.items:
            return None  # no input at all
    elif type(sent) is list:
        if not sent and not parser.chain.items:
            return None
        for index, item in enumerate(sent, parser.chain.items):
            if not fast_item(parser, index, item):
                return None
    else:
        return None
    if not _paired(parser):
        return None
    return parser._conversation(tools, choice)


def fast_item(parser: _Parser, index: int, item: Any) -> bool:
    """Walk `item` (`input[index]`) into `parser` as `_Parser._check_item` would, if it is a message,
    function call, function call output or reasoning item this walk can vouch for; else change
    nothing and return False."""
    if type(item) is not dict:
        return False
    kind = item.get("type", "message")
    if kind == "message":
        return _message(parser, index, item)
    if kind == "function_call":
        return _call(parser, index, item)
    if kind == "function_call_output":
        return _output(parser, index, item)
    if kind == "reasoning":
        return _reasoning(parser, index, item)
    return False


def _message(parser: _Parser, index: int, item: dict[str, Any]) -> bool:
    role = item.get("role")
    neutral = _NEUTRAL.get(role) if type(role) is str else None
    item_id = item.get("id")
    if neutral is None or item_id is not None and (type(item_id) is not str or not item_id.startswith("msg")):
        return False
    content = item.get("content")
    if type(content) is str:
        texts: list[Part] = [wire_text(content)]
    elif type(content) is list:
        keys = _OUTPUT_TEXT if neutral == "assistant" else _INPUT_TEXT
        texts = []
        for part in content:
            if type(part) is not dict:
                return False
            kind = part.get("type")
            key = keys.get(kind) if type(kind) is str else None
            if key is None:
                if neutral == "assistant" or kind not in _NO_TEXT:
                    return False
                continue
            text = part.get(key)
            if type(text) is not str:
                return False
            texts.append(wire_text(text))
    else:
        return False
    _turn(parser, neutral, index).parts.extend(texts)
    if item_id is not None:
        parser.item_ids.append(_ref(item_id, index, len(parser.turns) - 1, "message"))
    return True


def _call(parser: _Parser, index: int, item: dict[str, Any]) -> bool:
    call_id = item.get("call_id")
    name = item.get("name")
    arguments = item.get("arguments")
    item_id = item.get("id")
    if not _good_call_id(call_id) or type(name) is not str or type(arguments) is not str:
        return False
    if item_id is not None and (type(item_id) is not str or not item_id.startswith("fc")):
        return False
    at = len(parser.turns) - 1 if parser.open_assistant else len(parser.turns)
    meta = {"item_id": item_id} if item_id is not None else {}
    call = wire_call(call_id, name, call_arguments(arguments), meta)
    _turn(parser, "assistant", index).parts.append(call)
    parser.calls.append(_ref(call_id, index, at, ""))
    if item_id is not None:
        parser.item_ids.append(_ref(item_id, index, len(parser.turns) - 1, "function_call"))
    return True


def _output(parser: _Parser, index: int, item: dict[str, Any]) -> bool:
    call_id = item.get("call_id")
    output = item.get("output")
    item_id = item.get("id")
    if not _good_call_id(call_id) or item_id is not None and type(item_id) is not str:
        return False
    if type(output) is list:
        texts = []
        for part in output:
            kind = part.get("type") if type(part) is dict else None
            if kind == "input_text":
                text = part.get("text")
                if type(text) is not str:
                    return False
                texts.append(text)
            elif kind != "input_image" and kind != "input_file":
                return False
        output = "".join(texts)
    elif type(output) is not str:
        return False
    at = len(parser.turns)
    _turn(parser, "tool", index).parts.append(wire_result(call_id, output))
    parser.outputs.append(_ref(call_id, index, at, ""))
    if item_id is not None:
        parser.item_ids.append(_ref(item_id, index, at, "function_call_output"))
    return True


def _reasoning(parser: _Parser, index: int, item: dict[str, Any]) -> bool:
    item_id = item.get("id")
    summary = item.get("summary")
    encrypted = item.get("encrypted_content")
    if type(item_id) is not str or not item_id.startswith("rs") or type(summary) is not list:
        return False
    if encrypted is not None and type(encrypted) is not str:
        return False
    texts = [part["text"] for part in summary if type(part) is dict and type(part.get("text")) is str]
    reasoning = Reasoning.from_wire("openai-responses", item, summary="\n\n".join(texts))
    _turn(parser, "assistant", index).parts.append(reasoning)
    parser.item_ids.append(_ref(item_id, index, len(parser.turns) - 1, "reasoning"))
    return True


def _good_call_id(call_id: Any) -> TypeGuard[str]:
    return type(call_id) is str and 0 < len(call_id) <= _CALL_ID_MAX


def _turn(parser: _Parser, role: Role, index: int) -> Turn:
    """`_Parser._new_turn` for `input[index]` (-1: a string `input`), its path made only for a new turn."""
    if role == "assistant" and parser.open_assistant:
        return parser.turns[-1]
    parser.open_assistant = role == "assistant"
    path = "input" if index < 0 else _PATHS[index] if index < len(_PATHS) else f"input[{index}]"
    turn: Turn = _new(Turn)
    fields = turn.__dict__
    fields["role"], fields["path"], fields["parts"] = role, path, []
    parser.turns.append(turn)
    return turn


def _ref(key: str, item: int, message: int, item_type: str) -> Ref:
    made: Ref = _new(Ref)
    fields = made.__dict__
    fields["key"], fields["item"], fields["message"], fields["item_type"] = key, item, message, item_type
    return made


def _paired(parser: _Parser) -> bool:
    """`_Parser._check_pairing` finds nothing: every output answers a call before it that has no output
    yet, every call (the chain's included) has its output, and no item id repeats one before it."""
    waiting: dict[str, int] = {}
    for ref in parser.chain.waiting:
        waiting[ref.key] = waiting.get(ref.key, 0) + 1
    calls = parser.calls
    position = 0
    for output in parser.outputs:
        while position < len(calls) and calls[position].item < output.item:
            key = calls[position].key
            waiting[key] = waiting.get(key, 0) + 1
            position += 1
        if not waiting.get(output.key):
            return False
        waiting[output.key] -= 1
    if position < len(calls) or any(waiting.values()):
        return False
    ids: set[str] = set()
    for ref in parser.item_ids:  # a loop, not a comprehension: Python 3.11 makes a function of each one
        ids.add(ref.key)
    return len(ids) == len(parser.item_ids) and parser.chain.item_ids.isdisjoint(ids)


def _tools(value: Any) -> list[Tool] | None:
    """`_Parser._check_tools` for function and hosted tools whose fields it would pass."""
    if value is None:
        return []
    if type(value) is not list:
        return None
    tools = []
    for tool in value:
        kind = tool.get("type") if type(tool) is dict else None
        if kind != "function":
            if type(kind) is not str:
                return None
            continue  # a hosted tool: legal, and never called by the script
        name = tool.get("name")
        description = tool.get("description")
        parameters = tool.get("parameters")
        strict = tool.get("strict")
        if type(name) is not str or len(name) > _TOOL_NAME_MAX or _TOOL_NAME.fullmatch(name) is None:
            return None
        if description is not None and type(description) is not str:
            return None
        if parameters is None:
            parameters = {"type": "object", "properties": {}}
        elif type(parameters) is not dict:
            return None
        if strict is not None and type(strict) is not bool:
            return None
        tools.append(assembled(Tool, name=name, description=description or "", parameters=parameters))
    return tools


def _tool_choice(choice: Any) -> str | None:
    """`check_tool_choice` for a mode or a forced function."""
    if type(choice) is str:
        return choice if choice in _TOOL_CHOICES else None
    if type(choice) is dict and choice.get("type") == "function":
        name = choice.get("name")
        return name if type(name) is str else None
    return None
