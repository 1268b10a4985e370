"""The errors of kept state, in the provider's words first and the sandbox's reason after.

May touch: a wire format's error envelope (it builds `ErrorResponse`s), and the store's counters to say
why an id is gone. The provider's own text comes first, unchanged, so an SDK or framework that
matches on it still reacts the same; the sandbox's explanation follows after a blank line, as every
`sandbox:` addition does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...wire import ErrorResponse, Rule, WireFormat
from ._store import Store

__all__ = [
    "explain_missing_conversation",
    "explain_missing_response",
    "fingerprint_mismatch",
    "thread_error",
    "thread_refusal",
    "unsupported_in_thread",
]

_UNSUPPORTED_FIELDS = ("context_management",)
"""Request fields a thread refuses. [INF] `context_management` is one of the SDK's
`ThreadUnsupportedFeatureName` values (`types/thread_unsupported_feature_name.py`) that names a
request field, and a thread that holds the conversation cannot also have the server edit it. The
others are left alone: `hipaa` and `inference_hooks` name organisation settings, the thread docs
allow `cache_control` (up to four breakpoints) and `fallbacks` (the fallback's turn is not stored),
and the sandbox's reasoning scenarios run `thinking` on threads."""


def bound(store: Store) -> str:
    """The store's bound, the options that raise it and what a client can do instead."""
    mib = store.max_bytes / (1024 * 1024)
    return (
        f"the sandbox keeps at most {store.max_entries} stored responses, thread turns and conversation "
        f"items, and {mib:g} MiB of their history, forgetting the oldest first ({store.evictions} forgotten "
        "so far). Raise the bound with `sandbox serve --kept N --kept-mib M` (in process: "
        "`sandbox.Engine(kept=N, kept_mib=M)`)"
    )


def thread_error(wire: WireFormat, status: int, message: str, error_code: str | None, **details: Any) -> ErrorResponse:
    """Anthropic's envelope with the `error.details.error_code` the SDK branches on."""
    error = wire.error(status, message, rule=Rule.NOT_FOUND if status == 404 else Rule.MALFORMED)
    if error_code is None:
        return error
    body = json.loads(error.body)
    body["error"]["details"] = {"error_code": error_code, **details}
    error.body = _dumps(body)
    return error


def thread_refusal(wire: WireFormat, previous: str, reason: str, store: Store) -> ErrorResponse:
    """Why the turn `previous` cannot be continued (`Store.claim`'s reason)."""
    if reason == "continued":
        return thread_error(
            wire,
            400,
            f"The response that previous_message_id {previous!r} names has already been continued, and each "
            "response can be continued only once. Continue from the Thread's most recent response `id`.",
            "thread_already_continued",
        )
    if reason == "in_flight":
        return thread_error(  # the text: the SDK's ThreadContinueInFlightErrorDetails docstring
            wire,
            400,
            f"Another request is still continuing from previous_message_id {previous!r}. Wait for it to complete "
            'and continue from its response `id`, or replay the full conversation with `thread: {"type": '
            '"create"}`.\n\nsandbox: two requests continued the same turn at once; only the first is '
            "answered. One conversation sends one turn at a time: await each answer before the next turn.",
            "thread_continue_in_flight",
        )
    if reason in ("evicted", "broken"):
        why = (
            f"sandbox: this thread was forgotten to make room: {bound(store)}. The anthropic SDK's tool runner "
            "replays the history by itself on this error; a loop of your own should resend the whole "
            'conversation with `thread: {"type": "create"}`.'
        )
    elif store.where is not None:
        why = (
            f"sandbox: the sandbox keeps threads in {store.where}, each for the API key that started it: "
            "another store or another key does not find it. The anthropic SDK's tool runner replays the "
            "history by itself on this error."
        )
    else:
        why = (
            "sandbox: the sandbox keeps threads in memory, bounded, for as long as it runs, and a server keeps "
            "each for the API key that started it: a restart, another sandbox or another key does not find "
            "it. The anthropic SDK's tool runner replays the history by itself on this error."
        )
    return thread_error(
        wire,
        404,
        f"No usable Thread state was found for previous_message_id {previous!r}. Replay the full "
        f'conversation with `thread: {{"type": "create"}}` to start a new Thread.\n\n{why}',
        "thread_not_found",
    )


def fingerprint_mismatch(wire: WireFormat, changed: list[str]) -> ErrorResponse:
    return thread_error(
        wire,
        400,
        "A field that must stay the same across a Thread's turns differs from the value stored with the "
        f"Thread: {', '.join(changed)}. Send the stored values, or replay the full conversation with "
        '`thread: {"type": "create"}` to change them.',
        "thread_fingerprint_mismatch",
    )


def unsupported_in_thread(wire: WireFormat, fields: Mapping[str, Any]) -> ErrorResponse | None:
    """`thread_unsupported_request` for a request field a thread cannot carry, or None."""
    unsupported = [name for name in _UNSUPPORTED_FIELDS if fields.get(name) is not None]
    if not unsupported:
        return None
    names = ", ".join(f"`{name}`" for name in unsupported)
    return thread_error(  # the text: the SDK's ThreadUnsupportedRequestErrorDetails docstring
        wire,
        400,
        f"The request combines `thread` with {names}, which Threads do not support. Send the full "
        "conversation without `thread`, or change that field.\n\nsandbox: the anthropic SDK's thread helper "
        'does the first by itself with unsupported_request_behavior="continue_unthreaded".',
        "thread_unsupported_request",
        unsupported=unsupported,
    )


def explain_missing_response(error: ErrorResponse, reason: str, store: Store) -> ErrorResponse:
    """OpenAI's `Previous response with id '...' not found.` with why the sandbox has no such response."""
    if reason in ("evicted", "broken"):
        why = (
            f"sandbox: this response was forgotten to make room: {bound(store)}. Or send the whole "
            "conversation in `input` without `previous_response_id`."
        )
    elif store.where is not None:
        why = (
            "sandbox: the sandbox holds no response with this id for this sender: responses are kept in "
            f"{store.where}, each for the API key that made it, and nothing is kept for a request that said "
            "`store: false`. Continue from the `id` of a response this sandbox sent you, or send the whole "
            "conversation in `input`."
        )
    else:
        why = (
            "sandbox: the sandbox holds no response with this id for this sender: responses are kept in the "
            "memory of one sandbox (one `sandbox serve` process, one transport, one `mock()` block), a server "
            "keeps each for the API key that made it, and nothing is kept for a request that said `store: "
            "false`. Continue from the `id` of a response this sandbox sent you, or send the whole "
            "conversation in `input`."
        )
    return append_explanation(error, why)


def explain_missing_conversation(error: ErrorResponse, store: Store) -> ErrorResponse:
    """OpenAI's `Conversation with id '...' not found.` with where the sandbox keeps conversations."""
    where = (
        "the memory of one sandbox (one `sandbox serve` process, one transport, one `mock()` block)"
        if store.where is None
        else store.where
    )
    return append_explanation(
        error,
        f"sandbox: the sandbox holds no conversation with this id for this sender: conversations live in {where}, "
        "a server keeps each for the API key that made it, and the oldest are forgotten to make room. Create one "
        "with POST /v1/conversations (`client.conversations.create()`) and use its `id`.",
    )


def append_explanation(error: ErrorResponse, why: str) -> ErrorResponse:
    """`error` with `why` after its message, in the body and on the exception alike."""
    data = json.loads(error.body)
    envelope = data.get("error") if isinstance(data, dict) else None
    if not isinstance(envelope, dict) or not isinstance(envelope.get("message"), str):
        return error
    envelope["message"] = f"{envelope['message']}\n\n{why}"
    error.body = _dumps(data)
    error.message = envelope["message"]
    return error


def _dumps(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
