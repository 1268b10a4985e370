"""Learners' own loops, seen from the room's server: who sent a request, and their conversations as chats.

May touch: nothing but the request scope and the `Exchange` it is handed (read only). A loop is known
by the API key it sends, the way a real provider knows its callers: `Authorization: Bearer KEY`,
`x-api-key: KEY` (Anthropic), `x-goog-api-key: KEY` or `?key=KEY` (Gemini). Each learner gets their
own key at join, so any language's loop, pointed at the room's server, shows up under their name.

A refused turn is marked with the lesson's rule it breaks (the grader's own words), and the
provider's error beside it. A conversation is a run of requests whose history grows: a request
continues the learner's conversation with the same provider, model and first message (its `thread`)
when it carries more messages than the last one did, and starts a new conversation otherwise (the loop ran
again). Every string of a chat is valid Unicode.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..engine._engine import Exchange
from ..grading.judge._checks import diagnose
from ..grading.judge._lessons import lesson_for, lesson_for_diagnosis
from ..messages._types import Message, Reasoning, Text, ToolCall, ToolResult

__all__ = ["Chat", "api_key_of", "chat_of"]

MAX_ENTRY = 2000
"""Characters of one chat bubble: the page shows what the loop did, not megabytes of tool output."""
MAX_ENTRIES = 60


def api_key_of(scope: Mapping[str, Any]) -> str | None:
    """The API key a request carries, wherever its provider's SDK puts it."""
    raw_name: bytes
    raw_value: bytes
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1").strip()
        if name == "authorization" and value[:7].lower() == "bearer ":
            return value[7:].strip() or None
        if name in ("x-api-key", "x-goog-api-key") and value:
            return value
    query = scope.get("query_string", b"").decode("latin-1")
    keys = urllib.parse.parse_qs(query).get("key")
    return str(keys[-1]) if keys else None


def _valid(value: Any) -> Any:
    """`value` with every string made valid Unicode: a lone surrogate a loop sent (JSON allows
    `"\\ud800"`) becomes U+FFFD, so the transcript can be stored, rendered and exported."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(value, dict):
        return {key: _valid(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_valid(item) for item in value]
    return value


def _clip(text: str) -> str:
    return text if len(text) <= MAX_ENTRY else text[:MAX_ENTRY] + f" [... {len(text) - MAX_ENTRY} characters cut]"


def _part(part: object) -> str:
    if isinstance(part, Text):
        return part.text
    if isinstance(part, ToolCall):
        arguments = json.dumps(dict(part.arguments), ensure_ascii=False)
        return f"calls {part.name}({arguments})  [{part.id}]"
    if isinstance(part, ToolResult):
        error = " (error)" if part.is_error else ""
        return f"result for {part.call_id}{error}: {part.content}"
    if isinstance(part, Reasoning):
        return f"(thinking) {part.summary}" if part.summary else "(hidden reasoning)"
    return repr(part)


def _entry(message: Message, *, mark: str | None = None) -> dict[str, Any]:
    text = "\n".join(filter(None, (_part(part) for part in message.content))) or "(empty)"
    return {"role": message.role, "text": _clip(text), "mark": mark}


def _raw_items(body: bytes) -> tuple[str, list[Any]]:
    """The request's model and its list of turns, read straight from the JSON (any wire format)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return "", []
    if not isinstance(data, dict):
        return "", []
    model = str(data["model"]) if isinstance(data.get("model"), str) else ""
    for key in ("messages", "input", "contents"):
        items = data.get(key)
        if isinstance(items, list):
            return model, items
        if isinstance(items, str):
            return model, [{"role": "user", "content": items}]
    return model, []


def _call(name: object, arguments: object, ident: object) -> str:
    shown = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return f"calls {name}({shown})  [{ident}]"


def _raw_part(part: object) -> str:
    """One content part or item of any wire format, as the page's chat shows it."""
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return json.dumps(part, ensure_ascii=False)
    kind = part.get("type")
    if isinstance(part.get("text"), str):  # chat/anthropic/responses text blocks, Gemini text parts
        return str(part["text"])
    if kind == "tool_use":
        return _call(part.get("name"), part.get("input"), part.get("id"))
    if kind == "tool_result":
        return f"result for {part.get('tool_use_id')}: {_raw_text(part.get('content'))}"
    if kind == "function_call":
        return _call(part.get("name"), part.get("arguments"), part.get("call_id"))
    if kind == "function_call_output":
        return f"result for {part.get('call_id')}: {_raw_text(part.get('output'))}"
    if isinstance(part.get("functionCall"), dict):
        call = part["functionCall"]
        return _call(call.get("name"), call.get("args"), call.get("id", ""))
    if isinstance(part.get("functionResponse"), dict):
        response = part["functionResponse"]
        return f"result for {response.get('name')}: {json.dumps(response.get('response'), ensure_ascii=False)}"
    if kind in ("thinking", "redacted_thinking", "reasoning") or "thoughtSignature" in part:
        return "(reasoning)"
    return json.dumps(part, ensure_ascii=False)


def _raw_text(content: object) -> str:
    if isinstance(content, list):
        return "\n".join(_raw_part(part) for part in content)
    return _raw_part(content) if content is not None else ""


def _raw_entry(item: object, *, mark: str | None = None) -> dict[str, Any]:
    """A turn the wire format refused, read straight from the learner's JSON (their request, not code)."""
    if not isinstance(item, dict):
        return {"role": "?", "text": _clip(json.dumps(item, ensure_ascii=False)), "mark": mark}
    role = str(item.get("role") or ("tool" if str(item.get("type", "")).endswith("output") else "assistant"))[:20]
    lines = [_raw_text(item.get("content", item.get("parts")))] if ("content" in item or "parts" in item) else []
    if "content" not in item and "parts" not in item:
        lines = [_raw_part(item)]
    for call in item.get("tool_calls") or ():
        function = call.get("function", {}) if isinstance(call, dict) else {}
        lines.append(
            _call(function.get("name"), function.get("arguments"), call.get("id") if isinstance(call, dict) else "")
        )
    if item.get("tool_call_id"):
        lines = [f"result for {item['tool_call_id']}: {' '.join(lines)}"]
    return {"role": role, "text": _clip("\n".join(line for line in lines if line) or "(empty)"), "mark": mark}


def _has(item: dict[str, Any], kinds: tuple[str, ...], keys: tuple[str, ...]) -> bool:
    blocks = item.get("content", item.get("parts"))
    listed = blocks if isinstance(blocks, list) else []
    return item.get("type") in kinds or any(
        isinstance(block, dict) and (block.get("type") in kinds or any(key in block for key in keys))
        for block in listed
    )


def _call_ids(item: dict[str, Any]) -> list[str]:
    """The ids of the calls one raw turn makes, in any wire format (Gemini's calls may have none)."""
    blocks = item.get("content", item.get("parts"))
    listed = [*(item.get("tool_calls") or ()), item, *(blocks if isinstance(blocks, list) else ())]
    ids = []
    for block in listed:
        if not isinstance(block, dict):
            continue
        if block is not item and "function" in block or block.get("type") == "tool_use":
            ids.append(str(block.get("id")))
        elif block.get("type") == "function_call":
            ids.append(str(block.get("call_id")))
        elif isinstance(block.get("functionCall"), dict) and block["functionCall"].get("id"):
            ids.append(str(block["functionCall"]["id"]))
    return ids


def _raw_diagnosis(items: list[Any]) -> str | None:
    """What `diagnose` would call a request the wire format could not read, from its raw JSON in any
    wire format: `turn_once` (a turn's calls appear twice) or `turn_first` (results after a turn
    without calls)."""
    turns = [item for item in items if isinstance(item, dict)]
    made: set[str] = set()
    for index, item in enumerate(turns):
        calls = _call_ids(item)
        if any(call in made for call in calls):
            return "turn_once"
        made.update(calls)
        is_result = item.get("role") == "tool" or _has(
            item, ("tool_result", "function_call_output"), ("functionResponse",)
        )
        if not is_result or index == 0:
            continue
        before = turns[index - 1]
        made_calls = bool(before.get("tool_calls")) or _has(before, ("tool_use", "function_call"), ("functionCall",))
        if not made_calls and not (
            before.get("role") == "tool" or _has(before, ("tool_result", "function_call_output"), ())
        ):
            return "turn_first"
    return None


_WHERE = re.compile(r"\b(?:messages|input|contents)\.?\[(\d+)\]")
_PATH_MODEL = re.compile(r"/models/([^/:]+)")


class Chat(NamedTuple):
    """One exchange as the page shows it, and how the store tells which conversation it continues."""

    thread: str
    """A digest of the provider, the model and the first turn: what one conversation's requests share."""
    turns: int
    """The turns the request carried: a conversation goes on while each request carries more."""
    body: dict[str, Any]
    """The chat: every turn, the model's reply, the refusal marked with its rule (`requests` is the store's)."""


def chat_of(exchange: Exchange, at: float) -> Chat | None:
    """The chat of one exchange of a known learner; None for what is no model call."""
    if exchange.provider is None or exchange.status == 404:
        return None
    model, items = _raw_items(exchange.request_body)
    model, items = _valid(model), _valid(items)
    if not model:
        found = _PATH_MODEL.search(exchange.path)
        model = found.group(1) if found else ""
    first = json.dumps(items[0], sort_keys=True, ensure_ascii=False) if items else ""
    thread = hashlib.blake2b(f"{exchange.provider}\0{model}\0{first}".encode(), digest_size=8).hexdigest()
    return Chat(thread, len(items), _valid(_chat(exchange, items, model, at)))


def _chat(exchange: Exchange, items: list[Any], model: str, at: float) -> dict[str, Any]:
    error = exchange.error
    rule = lesson_for(error.rule).rule if error is not None else None
    conversation = exchange.conversation
    problem = diagnose(conversation.messages) if error is not None and conversation is not None else None
    if problem is not None:  # the grader's own diagnosis, so one mistake is counted under one rule
        rule = lesson_for_diagnosis(problem.kind).rule
    elif error is not None and conversation is None and (kind := _raw_diagnosis(items)) is not None:
        rule = lesson_for_diagnosis(kind).rule
    if conversation is not None:
        marked = error.message_index if error is not None else None
        entries = [
            _entry(message, mark=rule if index == marked else None)
            for index, message in enumerate(conversation.messages)
        ]
    else:
        where = _WHERE.search(f"{error.message if error else ''} {exchange.body[:2000].decode('utf-8', 'replace')}")
        marked = int(where.group(1)) if where else None
        entries = [_raw_entry(item, mark=rule if index == marked else None) for index, item in enumerate(items)]
    if exchange.turn is not None:
        reply = _entry(exchange.turn.message)
        reply["role"] = "model"
        entries.append(reply)
    if len(entries) > MAX_ENTRIES:
        cut = len(entries) - MAX_ENTRIES
        entries = [
            {"role": "note", "text": f"{cut} earlier messages not shown", "mark": None},
            *entries[-MAX_ENTRIES:],
        ]
    outcome = None
    if error is not None:
        outcome = {
            "status": exchange.status,
            "rule": rule,
            "kind": error.rule.value,
            "message": _clip(error.message),
            "index": marked,
        }
    return {
        "provider": exchange.provider,
        "model": model[:120],
        "scenario": exchange.scenario,
        "path": exchange.path[:200],
        "updated": at,
        "entries": entries,
        "outcome": outcome,
    }
