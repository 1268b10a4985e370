"""The fake side's answer in the Responses API: the response object, which a stream (`_stream`) sends
in progress first and whole last. Touches only a rendered `ModelTurn` and the request's
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
from .._sse import dumps
from ._ids import item_id_for, response_id

__all__ = ["encode_response", "refusal_part", "text_part"]

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
    items: list[dict[str, Any]] = []
    texts: list[str] = []
    for part in (*turn.message.content, None):  # None: the end, where a pending run of text is written too
        if isinstance(part, Text):
            texts.append(part.text)
            continue
        if texts:
            items.append(_message_item(turn, len(items), texts))
            texts = []
        if isinstance(part, Reasoning):
            items.append(part.data())
        elif isinstance(part, ToolCall):
            item_id = part.meta.get("item_id")
            items.append(
                {
                    "id": item_id if isinstance(item_id, str) else item_id_for("fc", turn.seed, f"call:{len(items)}"),
                    "type": "function_call",
                    "status": "completed",
                    "arguments": dumps(dict(part.arguments)),
                    "call_id": part.id,
                    "name": part.name,
                }
            )
    return items


def _message_item(turn: ModelTurn, index: int, texts: Sequence[str]) -> dict[str, Any]:
    """The message item `index` of a run of texts (refusal parts for a REFUSAL turn)."""
    refusal = turn.stop_reason is StopReason.REFUSAL
    return {
        "id": item_id_for("msg", turn.seed, f"message:{index}"),
        "type": "message",
        "status": "completed",
        "content": [refusal_part(text) if refusal else text_part(text) for text in texts],
        "role": "assistant",
    }


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
        "text": _text_settings(raw.get("text")),
        "tool_choice": _echo(raw, "tool_choice", "auto"),
        "tools": _echo_tools(conversation),
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }


def _text_settings(asked: Any) -> dict[str, Any]:
    """The response's `text`: the request's format as sent (a `json_schema` with its name and schema,
    as the answer to openai's `responses.parse(text_format=...)` carries it), plain text otherwise."""
    if isinstance(asked, Mapping) and isinstance(asked.get("format"), Mapping):
        return {"format": dict(asked["format"])}
    return {"format": {"type": "text"}}


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
