"""OpenAI's Conversations API, as kept state: what Responses clients use of it.

May touch: the store (conversations are entries in the same bounded store as threads and stored
responses, with the same owner rule) and the Responses wire format's error envelope. Paths, as the
`openai` SDK sends them (`resources/conversations/conversations.py`, `items.py`):

    POST   /v1/conversations                      {items?, metadata?}  -> conversation
    GET    /v1/conversations/{id}                                      -> conversation
    POST   /v1/conversations/{id}                 {metadata}           -> conversation
    DELETE /v1/conversations/{id}                                      -> conversation.deleted
    POST   /v1/conversations/{id}/items           {items}              -> list of the items added
    GET    /v1/conversations/{id}/items           ?limit&order&after   -> list (desc, 20 by default)
    GET    /v1/conversations/{id}/items/{item}                         -> item
    DELETE /v1/conversations/{id}/items/{item}                         -> conversation

A Responses request with `conversation` reads the conversation's items before its `input`, and its
input and output are appended once it is answered (`KeptState`). Items are stored as the API lists
them: each with an `id` (`msg_`, `fc_`, `rs_` as the Responses items; `fco_` for a tool output,
[INF]) and a `status`, a message's string content as `input_text` (`output_text` for the assistant)
parts, so a client that lists them and sends them back as `input` (openai-agents'
`OpenAIConversationsSession`) sends what the validator accepts.
"""

from __future__ import annotations

import hashlib
import json
import urllib.parse
from typing import Any

from ...wire import ErrorResponse, Rule, get_wire_format
from ...wire._json import loads
from ._errors import explain_missing_conversation
from ._store import ENTRY_OVERHEAD, Entry, Store

__all__ = ["CONVERSATIONS", "Conversations", "conversation_id", "normalise_items", "normalised"]

CONVERSATIONS = "/v1/conversations"
MAX_ITEMS_AT_ONCE = 20
"""Items one create call may add (the SDK's docstring: "You may add up to 20 items at a time")."""
_CREATED_AT = 1_767_225_600
"""2026-01-01T00:00:00Z: deterministic, as every timestamp the sandbox sends."""
_PREFIXES = {"message": "msg", "function_call": "fc", "function_call_output": "fco", "reasoning": "rs"}


def conversation_id(value: Any) -> str | None:
    """The id a Responses request's `conversation` names (`"conv_..."` or `{"id": "conv_..."}`)."""
    value = value.get("id") if isinstance(value, dict) else value
    return value if isinstance(value, str) else None


def normalise_items(items: list[Any], seed: str) -> bytes:
    """`items` as the conversation stores and lists them, comma-joined JSON; ids from `seed` (unique
    to the answer that adds them) where an item has none."""
    return b",".join(_dumps(item) for item in normalised(items, seed))


def normalised(items: list[Any], seed: str) -> list[dict[str, Any]]:
    """`items` as the conversation stores them (`normalise_items`), as objects: new dicts, though
    their values may be the items' own."""
    out: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        new_id = f"{_PREFIXES.get(kind, 'item')}_" + _token(f"{seed}:{index}")
        stored: dict[str, Any] = {"id": item.get("id") or new_id, "type": kind}
        if kind == "message":
            role = item.get("role")
            content = item.get("content")
            if isinstance(content, str):
                part = "output_text" if role == "assistant" else "input_text"
                content = [{"type": part, "text": content, **({"annotations": []} if role == "assistant" else {})}]
            stored.update({"status": item.get("status", "completed"), "content": content, "role": role})
        else:
            stored.update({key: value for key, value in item.items() if key not in ("id", "type")})
            if kind in ("function_call", "function_call_output"):
                stored.setdefault("status", "completed")
        out.append(stored)
    return out


class Conversations:
    """The Conversations endpoints over one store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.wire = get_wire_format("openai-responses")

    def handle(self, method: str, path: str, query: str, body: bytes, owner: str, seed: str) -> tuple[int, bytes]:
        """Answer one request at `path` (under `CONVERSATIONS`); raise `ErrorResponse` for a bad one."""
        parts = path[len(CONVERSATIONS) :].strip("/").split("/") if path != CONVERSATIONS else []
        method = method.upper()
        if not parts and method == "POST":
            return 200, self._create(body, owner, seed)
        if len(parts) == 1 and method in ("GET", "POST", "DELETE"):
            return 200, self._conversation(method, parts[0], body, owner)
        if len(parts) == 2 and parts[1] == "items" and method == "POST":
            return 200, self._add(parts[0], body, owner, seed)
        if len(parts) == 2 and parts[1] == "items" and method == "GET":
            return 200, self._list(parts[0], query, owner)
        if len(parts) == 3 and parts[1] == "items" and method in ("GET", "DELETE"):
            return 200, self._item(method, parts[0], parts[2], owner)
        raise self.wire.error(  # the Responses API's words for an unknown route [INF]
            404,
            f"Invalid URL ({method} {path})",
            rule=Rule.NOT_FOUND,
        )

    # -- conversations -------------------------------------------------------------------------

    def _create(self, body: bytes, owner: str, seed: str) -> bytes:
        data = self._json(body, allow_empty=True)
        items = self._items(data, required=False)
        metadata = data.get("metadata") or {}
        key = "conv_" + _token(f"conversation:{seed}")
        added = normalise_items(items, seed)
        fields = _dumps({"created_at": _CREATED_AT, "metadata": metadata})
        self.store.put(
            key, Entry(added, None, fields, owner, len(added) + len(fields) + ENTRY_OVERHEAD), None, once=False
        )
        return _dumps(_object(key, fields))

    def _conversation(self, method: str, key: str, body: bytes, owner: str) -> bytes:
        entry = self._entry(key, owner)
        if method == "GET":
            return _dumps(_object(key, entry.fields))
        if method == "DELETE":
            self.store.remove(key, owner)
            return _dumps({"id": key, "object": "conversation.deleted", "deleted": True})
        data = self._json(body, allow_empty=False)
        fields = json.loads(entry.fields)
        fields["metadata"] = data.get("metadata") or {}
        encoded = _dumps(fields)
        self.store.update(key, owner, fields=encoded)
        return _dumps(_object(key, encoded))

    # -- items ---------------------------------------------------------------------------------

    def _add(self, key: str, body: bytes, owner: str, seed: str) -> bytes:
        self._entry(key, owner)  # 404 for a conversation this sender does not hold
        items = self._items(self._json(body, allow_empty=False), required=True)
        added = normalise_items(items, seed)
        self.store.update(key, owner, append=added)
        return _dumps(_page(json.loads(b"[" + added + b"]"), has_more=False))

    def _list(self, key: str, query: str, owner: str) -> bytes:
        items = self._all(self._entry(key, owner))
        params = urllib.parse.parse_qs(query or "", keep_blank_values=True)
        order = params.get("order", ["desc"])[-1]
        if order not in ("asc", "desc"):
            raise self._invalid("order", order, "'asc' or 'desc'")
        limit_text = params.get("limit", ["20"])[-1]
        limit = int(limit_text) if limit_text.isdigit() else -1
        if not 1 <= limit <= 100:
            raise self._invalid("limit", limit_text, "an integer from 1 to 100")
        if order == "desc":
            items.reverse()
        after = params.get("after", [None])[-1]
        if after is not None:
            ids = [item.get("id") for item in items]
            if after not in ids:
                raise self._item_not_found(after)
            items = items[ids.index(after) + 1 :]
        return _dumps(_page(items[:limit], has_more=len(items) > limit))

    def _item(self, method: str, key: str, item_id: str, owner: str) -> bytes:
        entry = self._entry(key, owner)
        items = self._all(entry)
        found = next((item for item in items if item.get("id") == item_id), None)
        if found is None:
            raise self._item_not_found(item_id)
        if method == "GET":
            return _dumps(found)
        kept = b",".join(_dumps(item) for item in items if item is not found)
        self.store.update(key, owner, items=kept)
        return _dumps(_object(key, entry.fields))

    # -- helpers -------------------------------------------------------------------------------

    def _entry(self, key: str, owner: str) -> Entry:
        entry = self.find(key, owner)
        if entry is None:
            raise self.not_found(key)
        return entry

    def find(self, key: str, owner: str) -> Entry | None:
        """The conversation `key` of `owner`, or None (a thread's or a response's id is not one)."""
        entry = self.store.get(key) if key.startswith("conv_") else None
        return entry if entry is not None and entry.owner == owner else None

    def held(self, key: str, owner: str) -> tuple[bytes, tuple[bytes, ...], int, object] | None:
        """The items of the conversation `key` of `owner` (`Store.view`) and the snapshot of their walk,
        read together (another turn may be appending), or None."""
        return self.store.view(key, owner) if key.startswith("conv_") else None

    def not_found(self, key: str) -> ErrorResponse:
        error = self.wire.error(404, f"Conversation with id '{key}' not found.", rule=Rule.NOT_FOUND)  # [OBS]
        return explain_missing_conversation(error, self.store)

    def _item_not_found(self, item_id: str) -> ErrorResponse:
        return self.wire.error(404, f"Item with id '{item_id}' not found.", rule=Rule.NOT_FOUND)  # [INF]

    def _invalid(self, param: str, value: str, expected: str) -> ErrorResponse:
        return self.wire.error(
            400, f"Invalid '{param}': {value!r}. Expected {expected}.", rule=Rule.MALFORMED, param=param
        )  # [INF]

    @staticmethod
    def _all(entry: Entry) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = json.loads(b"[" + b",".join(part for part in entry.parts if part) + b"]")
        return items

    def _json(self, body: bytes, *, allow_empty: bool) -> dict[str, Any]:
        if allow_empty and not body.strip():
            return {}
        try:
            data = loads(body)
        except (ValueError, RecursionError):
            data = None
        if not isinstance(data, dict):
            self.wire.parse_request(body, path_model=None, path_stream=False)  # raises the API's own error
            raise self.wire.error(400, "The request body must be a JSON object.", rule=Rule.MALFORMED)  # [INF]
        return data

    def _items(self, data: dict[str, Any], *, required: bool) -> list[Any]:
        if "items" not in data or data["items"] is None:
            if required:
                raise self.wire.error(400, "Missing required parameter: 'items'.", rule=Rule.MALFORMED, param="items")
            return []
        items = data["items"]
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise self.wire.error(
                400, "Invalid type for 'items': expected an array of objects.", rule=Rule.MALFORMED, param="items"
            )  # [INF]
        if len(items) > MAX_ITEMS_AT_ONCE:
            raise self.wire.error(
                400,
                f"Invalid 'items': array too long. Expected an array with maximum length {MAX_ITEMS_AT_ONCE}, "
                f"but got an array with length {len(items)} instead.",
                rule=Rule.MALFORMED,
                param="items",
                code="array_above_max_length",
            )  # [INF] the API's wording for every array over its maximum
        return items


def _object(key: str, fields: bytes) -> dict[str, Any]:
    data = json.loads(fields)
    return {"id": key, "object": "conversation", "created_at": data["created_at"], "metadata": data["metadata"]}


def _page(items: list[dict[str, Any]], *, has_more: bool) -> dict[str, Any]:
    return {
        "object": "list",
        "data": items,
        "first_id": items[0]["id"] if items else None,
        "last_id": items[-1]["id"] if items else None,
        "has_more": has_more,
    }


def _token(seed: str) -> str:
    return hashlib.blake2b(seed.encode("utf-8", "surrogatepass"), digest_size=24).hexdigest()


def _dumps(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
