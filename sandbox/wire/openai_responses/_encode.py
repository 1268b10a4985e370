"""The fake side's answer in the Responses API: the response object, whole or as the texts a stream
sends (`_stream` writes the stream's events). Touches only a rendered `ModelTurn` and the request's
`Conversation`; it reads no request bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...messages._types import Reasoning, StopReason, Text, ToolCall
from .._base import (
    CREATED_AT,
    Conversation,
    ModelTurn,
)
from .._compact import compact_key
from .._memo import Memo
from .._sse import dumps, quote, to_bytes
from ._ids import item_id_for, response_id

__all__ = ["Answer", "encode_answer", "encode_response", "refusal_part", "text_part"]

_STATUSES = ("completed", "failed", "in_progress", "cancelled", "queued", "incomplete")


def encode_response(turn: ModelTurn, conversation: Conversation) -> dict[str, Any]:
    status, incomplete = _status(turn)
    usage = turn.usage
    return _response_object(
        turn,
        conversation,
        status=status,
        incomplete=incomplete,
        output=_output_items(turn),
        usage={
            "input_tokens": usage.input_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": turn.reasoning_tokens},
            "total_tokens": usage.total_tokens,
        },
    )


def encode_answer(turn: ModelTurn, conversation: Conversation) -> tuple[bytes, dict[str, Any]]:
    """`encode_response`'s body as it goes out (the text `dumps` writes for it), put together from the
    parts that change, and what kept state stores of it: the response's `id`, its `output` items, and
    their `output_bytes` as it stores them."""
    answer = Answer(turn, conversation)
    return to_bytes(answer.text()), answer.kept()


_ECHOES: Memo[tuple[str, str, str]] = Memo(entries=256, max_bytes=2 * 1024 * 1024, largest=64 * 1024)
"""The JSON text of the request's echoed fields (`compact_key`) -> `Answer`'s texts of them (see `_echoed`)."""
_ECHOED = frozenset(
    (
        "instructions",
        "max_output_tokens",
        "parallel_tool_calls",
        "reasoning",
        "store",
        "temperature",
        "tool_choice",
        "tools",
    )
)
"""The request fields an answer echoes (with the model, and whether the answer reasons), but the
ids of stored state (`previous_response_id`, `conversation`): a request naming one is not memoised,
as its echo names one sender's state and few other requests share it."""


def _echoed(conversation: Conversation, *, reasoning: bool) -> tuple[str, str, str]:
    """The texts of what an answer echoes of its request, around its status, its output and its usage:
    a pure function of the echoed fields' JSON text, the model and whether the answer reasons
    (`conversation.tools` is the reading of `tools`), so a room's requests with the same options and
    tools (every learner's, every round of a loop) have them written once. The key is JSON text, not
    the values, as `1` and `1.0` (and `true`) are equal keys and different echoes (`compact_key`:
    the fields sent, in the order sent (a pass over the body's few fields, not a look-up of each
    echoed name), without nulls, whose echo is an absent field's, and which it would send to
    `json`'s encoder)."""
    raw = conversation.raw
    key = None
    if raw.get("previous_response_id") is None and raw.get("conversation") is None:
        sent = {name: value for name, value in raw.items() if name in _ECHOED and value is not None}
        key = compact_key((conversation.model, reasoning, sent))
        found = _ECHOES.get(key)
        if found is not None:
            return found
    named = raw.get("conversation")
    named = named.get("id") if isinstance(named, Mapping) else named
    added = f'"conversation":{{"id":{quote(named)}}},' if isinstance(named, str) else ""
    settings = dumps(_reasoning_settings(raw, reasoning=reasoning))
    texts = (
        f',"background":false,{added}"error":null,"incomplete_details":',
        f',"instructions":{_json(raw.get("instructions"))},"max_output_tokens":{_json(raw.get("max_output_tokens"))},'
        f'"model":{quote(conversation.model)},"output":',
        f',"parallel_tool_calls":{_json(_echo(raw, "parallel_tool_calls", True))},'
        f'"previous_response_id":{_json(raw.get("previous_response_id"))},"reasoning":{settings},'
        f'"service_tier":"default","store":{_json(_echo(raw, "store", True))},'
        f'"temperature":{_json(_echo(raw, "temperature", 1.0))},"text":{{"format":{{"type":"text"}}}},'
        f'"tool_choice":{_json(_echo(raw, "tool_choice", "auto"))},"tools":{dumps(_echo_tools(conversation))},'
        '"top_p":1.0,"truncation":"disabled","usage":',
    )
    if key is not None:
        _ECHOES.put(key, texts, len(key) + sum(map(len, texts)) + 200)
    return texts


def _json(value: Any) -> str:
    """`dumps(value)`, the constants and strings without an encoder call."""
    if type(value) is str:
        return quote(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return dumps(value)


class Answer:
    """One answer's response object as JSON text, fields in `_response_object`'s order: what `dumps`
    writes for `encode_response`'s object, and for its in-progress copy a stream sends first, put
    together from the fields' texts, each written once."""

    def __init__(self, turn: ModelTurn, conversation: Conversation) -> None:
        self.status, incomplete = _status(turn)
        self.output, self.items = _output(turn)
        self.id = response_id(turn.response_seed, turn.seed)
        self._head = f'{{"id":"{self.id}","object":"response","created_at":{CREATED_AT},"status":'
        self._incomplete = _json(incomplete)
        self._state, self._fields, self._rest = _echoed(conversation, reasoning=bool(turn.message.reasoning()))
        usage = turn.usage
        self._usage = (
            f'{{"input_tokens":{usage.input_tokens},"input_tokens_details":{{"cached_tokens":0,"cache_write_tokens":0}},'
            f'"output_tokens":{usage.output_tokens},"output_tokens_details":{{"reasoning_tokens":{turn.reasoning_tokens}}},'
            f'"total_tokens":{usage.total_tokens}}}'
        )

    def text(self) -> str:
        """The whole response object."""
        return (
            f"{self._head}{quote(self.status)}{self._state}{self._incomplete}{self._fields}{self.items}{self._rest}"
            f'{self._usage},"user":null,"metadata":{{}}}}'
        )

    def pending(self) -> str:
        """The object a stream opens with: in progress, not incomplete, no output or usage yet."""
        return (
            f'{self._head}"in_progress"{self._state}null{self._fields}[]{self._rest}null,"user":null,"metadata":{{}}}}'
        )

    def kept(self) -> dict[str, Any]:
        """What kept state stores: the id, the output items and their bytes (`joined_bytes(output)`)."""
        return {"id": self.id, "output": self.output, "output_bytes": self.items[1:-1].encode("utf-8", "surrogatepass")}


# -- fake side --------------------------------------------------------------------------------------


def _status(turn: ModelTurn) -> tuple[str, dict[str, str] | None]:
    """`status` and `incomplete_details`; a raw stop reason is a status, or else an incomplete reason."""
    raw = turn.raw_stop_reason
    if raw is not None and raw != "incomplete":
        return (raw, None) if raw in _STATUSES else ("incomplete", {"reason": raw})
    if raw == "incomplete" or turn.stop_reason is StopReason.MAX_TOKENS:
        return "incomplete", {"reason": "max_output_tokens"}
    return "completed", None


def _output_items(turn: ModelTurn) -> list[dict[str, Any]]:
    """One message item per run of text (refusal parts for a REFUSAL turn), one item per call."""
    return _output(turn)[0]


def _output(turn: ModelTurn) -> tuple[list[dict[str, Any]], str]:
    """`_output_items`, and the text `dumps` writes for them, written as they are made: the part texts
    are quoted once each, and a reasoning item's text is its part's payload (the same encoder's). A
    turn of one text (a final answer, most answers) is its one message item, without the loop."""
    content = turn.message.content
    if len(content) == 1 and type(content[0]) is Text:
        item, text = _message_item(turn, 0, (content[0].text,))
        return [item], f"[{text}]"
    items: list[dict[str, Any]] = []
    written: list[str] = []
    texts: list[str] = []
    for part in (*content, None):  # None: the end, where a pending run of text is written too
        if isinstance(part, Text):
            texts.append(part.text)
            continue
        if texts:
            item, text = _message_item(turn, len(items), texts)
            items.append(item)
            written.append(text)
            texts = []
        if isinstance(part, Reasoning):
            items.append(part.data())
            written.append(part.payload)
        elif isinstance(part, ToolCall):
            item_id = part.meta.get("item_id")
            item = {
                "id": item_id if isinstance(item_id, str) else item_id_for("fc", turn.seed, f"call:{len(items)}"),
                "type": "function_call",
                "status": "completed",
                "arguments": dumps(dict(part.arguments)),
                "call_id": part.id,
                "name": part.name,
            }
            items.append(item)
            written.append(
                f'{{"id":{_json(item["id"])},"type":"function_call","status":"completed","arguments":'
                f'{quote(item["arguments"])},"call_id":{_json(part.id)},"name":{_json(part.name)}}}'
            )
    return items, f"[{','.join(written)}]"


def _message_item(turn: ModelTurn, index: int, texts: Sequence[str]) -> tuple[dict[str, Any], str]:
    """The message item `index` of a run of texts (refusal parts for a REFUSAL turn), and its text."""
    item_id = item_id_for("msg", turn.seed, f"message:{index}")
    refusal = turn.stop_reason is StopReason.REFUSAL
    head = _REFUSAL if refusal else _OUTPUT_TEXT
    if len(texts) == 1:  # no loops for the one text of most items
        text = texts[0]
        content = [refusal_part(text) if refusal else text_part(text)]
        parts = f"{head}{quote(text)}}}"
    else:
        content = [refusal_part(text) if refusal else text_part(text) for text in texts]
        parts = ",".join([head + quote(text) + "}" for text in texts])
    item = {"id": item_id, "type": "message", "status": "completed", "content": content, "role": "assistant"}
    return (
        item,
        f'{{"id":{quote(item_id)},"type":"message","status":"completed","content":[{parts}],"role":"assistant"}}',
    )


_OUTPUT_TEXT = '{"type":"output_text","annotations":[],"logprobs":[],"text":'
_REFUSAL = '{"type":"refusal","refusal":'


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}


def refusal_part(text: str) -> dict[str, Any]:
    return {"type": "refusal", "refusal": text}


def _echo(raw: Mapping[str, Any], key: str, default: Any) -> Any:
    value = raw.get(key)
    return default if value is None else value


def _echo_tools(conversation: Conversation) -> list[dict[str, Any]]:
    """The request's function tools, with the fields the API fills in (strict defaults to true)."""
    sent = conversation.raw.get("tools")
    strict = {
        tool.get("name"): tool.get("strict")
        for tool in (sent if isinstance(sent, list) else [])
        if isinstance(tool, dict) and isinstance(tool.get("strict"), bool)
    }
    return [
        {
            "type": "function",
            "description": tool.description or None,
            "name": tool.name,
            "parameters": dict(tool.parameters),
            "strict": strict.get(tool.name, True),
        }
        for tool in conversation.tools
    ]


def _response_object(
    turn: ModelTurn,
    conversation: Conversation,
    *,
    status: str,
    incomplete: dict[str, str] | None,
    output: list[dict[str, Any]],
    usage: dict[str, Any],
) -> dict[str, Any]:
    """The full response object, fields in the order the recorded responses use."""
    raw = conversation.raw
    return {
        "id": response_id(turn.response_seed, turn.seed),
        "object": "response",
        "created_at": CREATED_AT,
        "status": status,
        "background": False,
        **_conversation_field(raw.get("conversation")),
        "error": None,
        "incomplete_details": incomplete,
        "instructions": raw.get("instructions"),
        "max_output_tokens": raw.get("max_output_tokens"),
        "model": conversation.model,
        "output": output,
        "parallel_tool_calls": _echo(raw, "parallel_tool_calls", True),
        "previous_response_id": raw.get("previous_response_id"),
        "reasoning": _reasoning_settings(raw, reasoning=bool(turn.message.reasoning())),
        "service_tier": "default",
        "store": _echo(raw, "store", True),
        "temperature": _echo(raw, "temperature", 1.0),
        "text": {"format": {"type": "text"}},
        "tool_choice": _echo(raw, "tool_choice", "auto"),
        "tools": _echo_tools(conversation),
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }


def _conversation_field(named: Any) -> dict[str, Any]:
    """`conversation: {"id": ...}` when the request named one (`"conv_..."` or `{"id": ...}`), as the
    real answer says which conversation it was added to (openai 3.57 `Response.conversation`); absent
    otherwise, as in every recorded answer without one. [INF] its place among the fields."""
    named = named.get("id") if isinstance(named, Mapping) else named
    return {"conversation": {"id": named}} if isinstance(named, str) else {}


def _reasoning_settings(raw: Mapping[str, Any], *, reasoning: bool) -> dict[str, Any]:
    """The response's `reasoning`: the request's `effort` and `summary` as sent (pydantic-ai
    `test_openai_responses_model_thinking_part.yaml` asks `high`/`detailed` and reads them back; so
    does vercel/ai `openai-reasoning-encrypted-content.1.chunks.txt`). A reasoning model asked for no
    effort reports its default, `medium`; a model that does not reason reports null for both."""
    asked = raw.get("reasoning")
    settings = asked if isinstance(asked, Mapping) else {}
    effort = settings.get("effort")
    summary = settings.get("summary", settings.get("generate_summary"))
    return {
        "effort": effort if isinstance(effort, str) else ("medium" if reasoning else None),
        "summary": summary if isinstance(summary, str) else None,
    }
