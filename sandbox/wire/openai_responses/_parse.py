"""The fake side reading `POST /v1/responses`: one walk over the body, the checks in the API's order
(the texts and the per-field checks are in `_validate`), then pairing, then the neutral model.
Touches only request bytes; raises nothing but `ErrorResponse`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from ...messages._types import Reasoning, Role, Text, Tool, ToolCall, ToolResult
from .._base import (
    Conversation,
    Rule,
)
from .._openai import call_arguments
from ._turns import START as _START
from ._turns import ItemRef, Walked
from ._turns import Turn as _Turn
from ._validate import (
    EMPTY_INPUT,
    ITEM_TYPES,
    KNOWN_PARAMETERS,
    MIN_OUTPUT_TOKENS,
    MOVED_MESSAGES,
    NEUTRAL_ROLES,
    ROLES,
    SCALARS,
    check_call_id,
    check_function_tool,
    check_item_id,
    check_output_part,
    check_part,
    check_tool_choice,
    fail,
    invalid_value,
    json_kind,
    load_json,
    matches,
    missing,
    unknown_parameter,
    wrong_type,
)

__all__ = ["Parser", "parse_continuing", "parse_request"]


def parse_request(body: bytes) -> Conversation:
    """Validate `body` like `POST /v1/responses` and return it in the neutral model."""
    data = load_json(body)
    if not isinstance(data, dict):
        # [INF] no public report of a JSON body that is not an object.
        fail(f"Invalid type for 'body': expected an object, but got {json_kind(data, top=True)} instead.")
    return _walk(data, _START)[0]


def parse_continuing(data: dict[str, Any], walked: Walked | None) -> tuple[Conversation, Parser]:
    """`data` (a continuation's fields, its `input` only its own items, as a list) validated after the
    chain `walked` stands for: the conversation `parse_request` makes of the whole request, walking
    only what is new. Any error is the one the whole request would get, though its wording may place
    it differently: the caller asks `parse_request` for the exact answer."""
    return _walk(data, walked or _START)


def _walk(data: dict[str, Any], walked: Walked) -> tuple[Conversation, Parser]:
    parser = Parser(data, walked)
    return parser.run(), parser


class Parser:
    """One walk over a request body: schema checks in the API's order, then pairing."""

    def __init__(self, data: dict[str, Any], walked: Walked = _START) -> None:
        self.data = data
        self.turns: list[_Turn] = []
        self.open_assistant = walked.open_assistant
        self.calls: list[ItemRef] = []
        self.outputs: list[ItemRef] = []
        self.item_ids: list[ItemRef] = []
        self.chain = walked
        instructions = data.get("instructions")
        if isinstance(instructions, str):
            # `instructions` is the system prompt: neutral message 0, so every index below counts it.
            self.turns.append(_Turn("system", "instructions", [Text(instructions)]))
        self.first = len(self.turns)
        """The index of the chain's first turn."""
        self.turns += walked.turns
        if walked.open_assistant:  # a continuation's assistant items join this turn: not the shared one
            last = self.turns[-1]
            self.turns[-1] = _Turn(last.role, last.path, list(last.parts))

    def run(self) -> Conversation:
        data = self.data
        self._check_model()
        if "input" not in data:
            missing("input")  # [OBS] before unknown keys, after `model`
        for key in data:
            if key == "messages":
                fail(MOVED_MESSAGES, None, "unsupported_parameter")
            if key not in KNOWN_PARAMETERS:
                unknown_parameter(key, data)
        self._check_input(data["input"])
        tools = self._check_tools(data.get("tools"))
        tool_choice = check_tool_choice(data.get("tool_choice"))
        self._check_scalars()
        self._check_server_state()
        if data["input"] in ("", []) and not self.chain.items:
            fail(EMPTY_INPUT, None, "missing_required_parameter")  # [OBS] after the state phase
        self._check_pairing()
        return self._conversation(tools, tool_choice)

    # -- top level -----------------------------------------------------------------------------

    def _check_model(self) -> None:
        if "model" not in self.data:
            missing("model")
        model = self.data["model"]
        if not isinstance(model, str):
            wrong_type("model", "a string", model, top=True)
        if model == "":
            fail("The requested model '' does not exist.", "model", "model_not_found")  # [OBS]

    def _check_input(self, value: Any) -> None:
        if value is None:
            wrong_type("input", "a string", value, top=True)  # [OBS] sic: "expected a string"
        if isinstance(value, str):
            if value:
                self._new_turn("user", "input").parts.append(Text(value))
            return
        if not isinstance(value, list):
            wrong_type("input", "one of a string or array of input items", value, top=True)
        for index, item in enumerate(value, self.chain.items):
            self.check_item(index, item)

    def _check_tools(self, value: Any) -> list[Tool]:
        if value is None:
            return []
        if not isinstance(value, list):
            wrong_type("tools", "an array of tools", value, top=True)  # [OBS]
        tools = []
        for index, tool in enumerate(value):
            path = f"tools[{index}]"
            if not isinstance(tool, dict):
                wrong_type(path, "an object", tool)  # [INF]
            if "type" not in tool:
                missing(f"{path}.type")  # [OBS]
            if not isinstance(tool["type"], str):
                wrong_type(f"{path}.type", "a string", tool["type"])  # [INF]
            if tool["type"] == "function":
                tools.append(check_function_tool(path, tool))
            # Hosted tools (web_search, file_search, ...) are legal; the scripted model never calls them.
        return tools

    def _check_scalars(self) -> None:
        """The plain fields a tool loop sends, in the order the API checks them [OBS]."""
        for key, expected in SCALARS:
            value = self.data.get(key)
            if value is not None and not matches(value, expected):
                wrong_type(key, expected, value, top=True)
        tokens = self.data.get("max_output_tokens")
        if tokens is not None and tokens < MIN_OUTPUT_TOKENS:
            fail(
                "Invalid 'max_output_tokens': integer below minimum value. "
                f"Expected a value >= {MIN_OUTPUT_TOKENS}, but got {tokens} instead.",
                "max_output_tokens",
                "integer_below_min_value",
            )

    def _check_server_state(self) -> None:
        """The sandbox stores nothing, so every stored-state reference is one the server never saw; but
        naming both kinds of history at once is refused first, as the API refuses it whatever either
        names (praxis-proxy/ai#999, whose review quotes the API's answer: the 400, its type, `param`
        null, code `mutually_exclusive_parameters`; the message's middle is elided there, so the
        wording between its two ends is [INF])."""
        previous = self.data.get("previous_response_id")
        if previous is not None and self.data.get("conversation") is not None:
            fail(
                "Mutually exclusive parameters: Ensure you are only providing one of: "
                "'previous_response_id' or 'conversation'.",
                None,
                "mutually_exclusive_parameters",
            )
        if previous is not None:
            if not isinstance(previous, str):
                wrong_type("previous_response_id", "a string", previous, top=True)
            fail(
                f"Previous response with id '{previous}' not found.",
                "previous_response_id",
                "previous_response_not_found",
            )  # [OBS]
        conversation = self.data.get("conversation")
        conversation_id = conversation.get("id") if isinstance(conversation, dict) else conversation
        if isinstance(conversation_id, str):
            fail(f"Conversation with id '{conversation_id}' not found.", status=404)  # [OBS]

    # -- input items ---------------------------------------------------------------------------

    def _index_for(self, role: Role) -> int:
        """The neutral index the item being checked belongs to (for the teaching transcript)."""
        joins = role == "assistant" and self.open_assistant
        return len(self.turns) - 1 if joins else len(self.turns)

    def _new_turn(self, role: Role, path: str) -> _Turn:
        if role == "assistant" and self.open_assistant:
            return self.turns[-1]
        self.open_assistant = role == "assistant"
        turn = _Turn(role, path)
        self.turns.append(turn)
        return turn

    def check_item(self, index: int, item: Any) -> None:
        path = f"input[{index}]"
        if not isinstance(item, dict):
            wrong_type(path, "an input item", item, index=len(self.turns))  # [OBS]
        kind = item.get("type", "message")
        if not isinstance(kind, str) or kind not in ITEM_TYPES:
            invalid_value(kind, ITEM_TYPES, path, index=len(self.turns))  # [OBS]
        if kind == "message":
            self._check_message(path, item)
        elif kind == "function_call":
            self._check_function_call(index, path, item)
        elif kind == "function_call_output":
            self._check_function_call_output(index, path, item)
        elif kind == "reasoning":
            self._check_reasoning(path, item)
        # Other item types (hosted tool calls, ...) are legal input that the scripted model never
        # produces: accepted, and left out of the neutral conversation.
        item_id = item.get("id")
        if isinstance(item_id, str):
            owned = ("message", "function_call", "function_call_output", "reasoning")
            owner = len(self.turns) - 1 if kind in owned else -1
            self.item_ids.append(ItemRef(item_id, index, owner, kind))

    def _check_message(self, path: str, item: Mapping[str, Any]) -> None:
        role = item.get("role")
        if not isinstance(role, str) or role not in ROLES:
            invalid_value(role, ROLES, path, index=len(self.turns))  # [OBS]
        neutral_role = NEUTRAL_ROLES[role]
        at = self._index_for(neutral_role)
        check_item_id(path, item, "msg", at)
        if "content" not in item:
            missing(f"{path}.content", index=at)  # [OBS]
        content = item["content"]
        texts: list[str | None]
        if isinstance(content, str):
            texts = [content]
        elif isinstance(content, list):
            texts = [check_part(f"{path}.content[{j}]", part, role, at) for j, part in enumerate(content)]
        else:
            wrong_type(f"{path}.content", "one of a string or array of objects", content, index=at)  # [INF]
        self._new_turn(neutral_role, path).parts.extend(Text(text) for text in texts if text is not None)

    def _check_function_call(self, index: int, path: str, item: Mapping[str, Any]) -> None:
        at = self._index_for("assistant")
        call_id = check_call_id(path, item, at)  # [INF] field order: call_id, name, arguments, id
        strings = {}
        for key in ("name", "arguments"):
            if key not in item:
                missing(f"{path}.{key}", index=at)
            if not isinstance(item[key], str):
                wrong_type(f"{path}.{key}", "a string", item[key], index=at)
            strings[key] = item[key]
        check_item_id(path, item, "fc", at)  # [ISSUE] "Expected an ID that begins with 'fc'."
        # The API passes arguments through as an opaque string (C15); the neutral model wants a dict.
        arguments = call_arguments(strings["arguments"])
        meta = {"item_id": item["id"]} if isinstance(item.get("id"), str) else {}
        self._new_turn("assistant", path).parts.append(ToolCall(call_id, strings["name"], arguments, meta=meta))
        self.calls.append(ItemRef(call_id, index, at))

    def _check_reasoning(self, path: str, item: Mapping[str, Any]) -> None:
        """A reasoning item joins the assistant turn it opens; its echo rules run in the replay
        (`_reasoning.check_echo`), which knows what the fake sent."""
        at = self._index_for("assistant")
        if "id" not in item:
            missing(f"{path}.id", index=at)  # [INF] REF template; the SDK's param requires it
        check_item_id(path, item, "rs", at)  # [INF] by analogy with 'fc' and 'msg'
        if "summary" not in item:
            missing(f"{path}.summary", index=at)  # [INF] REF template; the SDK's param requires it
        summary = item["summary"]
        if not isinstance(summary, list):
            wrong_type(f"{path}.summary", "an array", summary, index=at)  # [INF]
        content = item.get("encrypted_content")
        if content is not None and not isinstance(content, str):
            wrong_type(f"{path}.encrypted_content", "a string", content, index=at)  # [INF] REF template
        texts = [part["text"] for part in summary if isinstance(part, dict) and isinstance(part.get("text"), str)]
        reasoning = Reasoning.from_wire("openai-responses", item, summary="\n\n".join(texts))
        self._new_turn("assistant", path).parts.append(reasoning)

    def _check_function_call_output(self, index: int, path: str, item: Mapping[str, Any]) -> None:
        at = len(self.turns)
        call_id = check_call_id(path, item, at)
        if "output" not in item:
            missing(f"{path}.output", index=at)
        output = item["output"]
        if isinstance(output, list):
            output = "".join(check_output_part(f"{path}.output[{j}]", part, at) for j, part in enumerate(output))
        elif not isinstance(output, str):
            wrong_type(f"{path}.output", "one of a string or array of objects", output, index=at)  # [INF]
        item_id = item.get("id")
        if item_id is not None and not isinstance(item_id, str):
            wrong_type(f"{path}.id", "a string", item_id, index=at)  # [INF]
        self._new_turn("tool", path).parts.append(ToolResult(call_id, output))
        self.outputs.append(ItemRef(call_id, index, at))

    # -- pairing (R3, then 4.3's R2, R1 and a duplicated output) ----------------------------------

    def _check_pairing(self) -> None:
        """Each output answers one earlier call with its call_id, anywhere before it in the input. A
        duplicated item id is refused first (R3): the API answers R3 for a stored response's
        `function_call` re-sent with its id and its output beside `previous_response_id`
        (MacPaw/OpenAI#432; openai/openai-agents-python#1789 the same with a conversation), where
        the pairing alone would report the stored call unanswered (R1)."""
        seen: set[str] = set()
        for ref in self.item_ids:
            if ref.key in seen or ref.key in self.chain.item_ids:
                self._duplicate(ref)
            seen.add(ref.key)
        waiting: dict[str, list[ItemRef]] = {}
        for call in self.chain.waiting:
            waiting.setdefault(call.key, []).append(call)
        orphan: ItemRef | None = None
        duplicate: ItemRef | None = None
        outputs = {output.item for output in self.outputs}
        for ref in sorted([*self.calls, *self.outputs], key=lambda ref: ref.item):
            if ref.item not in outputs:
                waiting.setdefault(ref.key, []).append(ref)
            elif waiting.get(ref.key):
                waiting[ref.key].pop(0)
            elif ref.key in waiting:
                duplicate = duplicate or ref  # every call with this id already has its output
            else:
                orphan = orphan or ref  # also a result placed BEFORE its call: [INF] by reading R2
        if orphan is not None:
            fail(
                f"No tool call found for function call output with call_id {orphan.key}.",
                "input",
                rule=self._orphan_rule(orphan),
                index=orphan.message,
            )
        unanswered = sorted((ref for refs in waiting.values() for ref in refs), key=lambda ref: ref.item)
        if unanswered:
            first = unanswered[0]
            fail(
                f"No tool output found for function call {first.key}.",
                "input",
                rule=Rule.MISSING_RESULT,
                index=first.message,
            )
        if duplicate is not None:
            # [ISSUE] NousResearch/hermes-agent#102629 quotes this 400 through a gateway's relay
            # ("Upstream request failed: [invalid_request_error] ..."); that the upstream was OpenAI, and
            # the param, are inferred.
            fail(
                f"Duplicate function_call_output for call_id '{duplicate.key}'. Each function_call must have "
                "exactly one matching function_call_output",
                "input",
                rule=Rule.DUPLICATE_RESULT,
                index=duplicate.message,
            )

    def _duplicate(self, ref: ItemRef) -> NoReturn:
        rule = Rule.DUPLICATE_RESULT if ref.item_type == "function_call_output" else Rule.DUPLICATE_TURN
        fail(
            f"Duplicate item found with id {ref.key}. Remove duplicate items from your input and try again.",
            "input",
            rule=rule,
            index=ref.message if ref.message >= 0 else None,
        )

    def _orphan_rule(self, output: ItemRef) -> Rule:
        """Which mistake an unmatched output most likely is, so the hint can say what to fix."""
        if any(call.key == output.key for call in self.calls):
            return Rule.RESULT_WITHOUT_TURN  # the results came before the turn that calls them
        before = [turn for turn in self.turns[: output.message] if turn.role == "assistant"]
        if not before or not any(isinstance(part, ToolCall) for part in before[-1].parts):
            return Rule.RESULT_WITHOUT_TURN  # the turn is missing, or was rebuilt as text
        return Rule.UNKNOWN_CALL_ID

    def _conversation(self, tools: list[Tool], tool_choice: str | None) -> Conversation:
        chain = self.chain
        if chain is _START:  # a request walked whole: every turn is its own
            self.messages = [turn.message() for turn in self.turns]
            self.paths = [turn.path for turn in self.turns]
        else:
            kept = len(chain.messages) - chain.open_assistant  # the chain's messages no item of this request changed
            start = self.first + kept
            self.messages = [
                *(turn.message() for turn in self.turns[: self.first]),
                *chain.messages[:kept],
                *(turn.message() for turn in self.turns[start:]),
            ]
            self.paths = [
                *(turn.path for turn in self.turns[: self.first]),
                *chain.paths[:kept],
                *(turn.path for turn in self.turns[start:]),
            ]
        return Conversation(
            model=self.data["model"],
            messages=self.messages,
            paths=self.paths,
            tools=tools,
            tool_choice=tool_choice,
            stream=self.data.get("stream") is True,
            raw=self.data,
            cloud=None,
        )
