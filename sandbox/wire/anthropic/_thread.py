"""A message thread's walk, kept past the request: what a `thread: continue` request goes on from
(`sandbox.engine.kept` keeps it beside the thread's newest turn). Touches only the walk's state and a
continuation's own messages; raises nothing but `ErrorResponse`.

A continuation's whole request is its thread's messages and its own. Each earlier message was
checked when it arrived, and the answers are the fake's own, so the walk over them is kept
(`Thread`): a continuation checks only its own messages against it, with the rules that look
across messages (pairing, merged turns, unique call ids, the final assistant turn) run from where
the thread left them. The verdict is the whole request's; the wording of an error is not (its
`messages.N` counts from the continuation), so on any error the caller walks the whole request
again for the exact text (`parse_body`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...messages._types import Message
from .._base import Conversation
from ._body import Block, Body, Rejection, WireMessage
from ._encode import error
from ._parse import _parts, parse_body, to_neutral
from ._reasoning import check_final_turn
from ._rules import _block_problem, _check_calls, _check_content, _check_results, _merge, _MergedTurn
from ._validate import _message, validate_schema

__all__ = ["Thread", "Walk", "continue_thread", "thread_after", "walk_thread"]

_TOOL_BLOCKS = ("tool_use", "tool_result")


@dataclass(frozen=True)
class Thread:
    """What the walk over a thread's messages left, its newest answer last. Immutable: a thread turn is
    continued once, but a failed continuation leaves it to the next."""

    count: int
    """Wire messages walked: a continuation's first message is `messages[count]`."""
    messages: tuple[Message, ...]
    """The neutral messages (the thread's `system`, if it has one, first)."""
    paths: tuple[str, ...]
    last: tuple[str, tuple[tuple[int, int, Block], ...]]
    """The last merged turn, its role and blocks: a continuation's first messages may join it, and its
    calls' pairing depends on what follows. (Its blocks' places count from the request that added
    them: only an error names a place, and an error is worded by the whole walk.)"""
    call_ids: frozenset[str]
    """The `tool_use` ids of the turns before `last`."""
    tool_blocks: bool
    """Whether any message holds a `tool_use` or `tool_result` block (they need `tools`)."""
    answer: bytes
    """The newest answer's message as JSON: the final-turn rule and the echo rule read it."""
    checked: int
    """Neutral messages whose limits were checked by the thread's requests; the answer's come after."""


@dataclass(frozen=True)
class Walk:
    """One request's walk: the thread it went on from (None: it walked the whole request), its body."""

    thread: Thread | None
    body: Body
    conversation: Conversation


def walk_thread(request: bytes) -> tuple[Conversation, Walk]:
    """`parse_request`, and its walk for the answer's snapshot (`thread_after`)."""
    conversation, body = parse_body(request)
    return conversation, Walk(None, body, conversation)


def continue_thread(data: dict[str, Any], thread: Thread) -> tuple[Conversation, Walk]:
    """`data` (the continuation's fields and the thread's `system` and `tools`, its `messages` only its
    own) checked after `thread`: the conversation `parse_request` makes of the whole request. The
    conversation's `raw` holds the wire messages from the thread's answer on (the earlier ones are
    None): the echo rule reads no others when the replay goes on from the thread's, and the engine
    reads the whole request otherwise (`Resume.tail_only`)."""
    try:
        body = validate_schema(data)
        neutral = to_neutral(body, offset=thread.count)
        answer = json.loads(thread.answer)
        check_final_turn({"thinking": data.get("thinking"), "messages": [answer, *data["messages"]]})
        _check_after(thread, body)
    except Rejection as problem:
        raise error(400, problem.message, rule=problem.rule) from None
    conversation = Conversation(
        model=body.model,
        messages=[*thread.messages, *neutral.messages],
        paths=[*thread.paths, *neutral.paths],
        tools=body.tools,
        tool_choice=body.tool_choice,
        stream=body.stream,
        raw={**data, "messages": [*([None] * (thread.count - 1)), answer, *data["messages"]]},
    )
    return conversation, Walk(thread, body, conversation)


def _check_after(thread: Thread, body: Body) -> None:
    """`check_rules` on the whole request, for what it can find that the thread's walk did not: the
    continuation's own messages, and the thread's last turn with what now follows it."""
    _check_content(body.messages)  # the optional empty final message is the continuation's, as in the whole
    if not body.tool_count and (thread.tool_blocks or _holds_tool_blocks(body.messages)):
        raise Rejection("tool blocks without tools")  # the whole walk says it in the API's words
    role, blocks = thread.last
    turns = [_MergedTurn(role, list(blocks)), *_merge(body.messages)]
    if len(turns) > 1 and turns[1].role == role:  # the continuation's first messages join the last turn
        turns[0].blocks.extend(turns.pop(1).blocks)
    seen: set[str] = set()
    for index, turn in enumerate(turns):
        if turn.role == "user":
            _check_results(turn, turns[index - 1] if index else None)
        elif turn.role == "assistant":
            _check_calls(turn, turns[index + 1] if index + 1 < len(turns) else None)
            for _, _, block in turn.blocks:
                if block.kind == "tool_use":
                    if block.id in thread.call_ids or block.id in seen:
                        raise Rejection("a repeated tool_use id")  # the whole walk says where
                    seen.add(block.id)


def _holds_tool_blocks(messages: list[WireMessage]) -> bool:
    return any(block.kind in _TOOL_BLOCKS for message in messages for block in message.blocks)


def thread_after(walk: Walk, reply: bytes) -> Thread | None:
    """The thread after `walk`'s request and its answer `reply` (the answer's message as JSON, as the
    thread stores it), for the next continuation; None where the short walk could not judge the next
    request as the whole one would (the next continuation then walks the whole thread)."""
    try:
        text = reply.decode("utf-8")
        answer = _message(json.loads(text), "answer")
    except (ValueError, Rejection):
        return None
    sent = walk.body.messages
    if b"NaN" in reply or b"Infinity" in reply or not answer.blocks or not all(message.blocks for message in sent):
        return None  # an empty message is allowed only last, and the next request's whole JSON must read alike
    if any(_block_problem(block, answer.role, "") for block in answer.blocks):
        return None
    thread = walk.thread
    start = thread.count if thread is not None else 0
    placed = [*sent, answer]
    turns = _merge(placed)
    if thread is not None:
        role, blocks = thread.last
        if turns[0].role == role:
            turns[0] = _MergedTurn(role, [*blocks, *turns[0].blocks])
        else:
            turns.insert(0, _MergedTurn(role, list(blocks)))
    last = turns[-1]
    if last.role != "assistant":
        return None
    before = [
        block.id
        for turn in turns[:-1]
        if turn.role == "assistant"
        for _, _, block in turn.blocks
        if block.kind == "tool_use"
    ]
    count = start + len(placed)
    conversation = walk.conversation
    return Thread(
        count=count,
        messages=(*conversation.messages, Message("assistant", _parts(answer.blocks))),
        paths=(*conversation.paths, f"messages[{count - 1}]"),
        last=("assistant", tuple(last.blocks)),
        call_ids=(thread.call_ids if thread is not None else frozenset()).union(before),
        tool_blocks=(thread is not None and thread.tool_blocks) or _holds_tool_blocks(placed),
        answer=reply,
        checked=len(conversation.messages),
    )
