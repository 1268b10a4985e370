"""The rules the Messages API checks after the schema (reference A.6, steps 1-4): content, tools
defined, consecutive same-role turns merged, then the walk pairing `tool_use` with `tool_result`.
Touches only a `Body` that passed the schema; raises nothing but `Rejection`. Evidence tags as in
`_body`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._base import Rule
from ._body import Block, Body, Rejection, WireMessage

__all__ = ["check_rules"]


# -- the rules after the schema ---------------------------------------------------------------------


def check_rules(body: Body) -> None:
    """Steps 1 (content checks), 2, 3 and 4 of the reference's order, on a body that passed the schema."""
    _check_content(body.messages)
    has_tool_blocks = any(
        block.kind in ("tool_use", "tool_result") for message in body.messages for block in message.blocks
    )
    if has_tool_blocks and not body.tool_count:
        # [3P] a test constant; portkey's error library quotes it without backticks.
        raise Rejection("Requests which include `tool_use` or `tool_result` blocks must define tools.")
    turns = _merge(body.messages)
    call_ids: set[str] = set()
    for index, turn in enumerate(turns):
        if turn.role == "user":
            _check_results(turn, turns[index - 1] if index else None)
        elif turn.role == "assistant":
            _check_calls(turn, turns[index + 1] if index + 1 < len(turns) else None)
            _check_unique(turn, call_ids)


def _check_content(messages: list[WireMessage]) -> None:
    last = len(messages) - 1
    for index, message in enumerate(messages):
        if not message.blocks and not (index == last and message.role == "assistant"):
            # [ISSUE] chatlabs PR #35 (unindexed, 2024); claude-code#6458 shows `messages.25: all
            # messages ...` (2025); the tail after "all messages" is [INF] from the 2024 text.
            raise Rejection(
                f"messages.{index}: all messages must have non-empty content except for the optional "
                "final assistant message",
                message_index=index,
            )
        for position, block in enumerate(message.blocks):
            problem = _block_problem(block, message.role, f"messages.{index}")
            if problem:
                raise Rejection(problem, message_index=index, block_index=position)


def _block_problem(block: Block, role: str, where: str) -> str:
    if block.kind == "text" and not block.text:
        return "messages: text content blocks must be non-empty"  # [ISSUE] chatbot-ui#1656
    if block.kind == "tool_result" and role != "user":
        return f"{where}: `tool_result` blocks can only be in `user` messages"  # [3P]
    if block.kind == "tool_use" and role != "assistant":
        return f"{where}: `tool_use` blocks can only be in `assistant` messages"  # [INF] the mirror rule
    return ""


@dataclass(slots=True)
class _MergedTurn:
    """Consecutive same-role messages, merged as the API merges them; blocks keep their wire place."""

    role: str
    blocks: list[tuple[int, int, Block]]
    """(message index, block index in that message, block)."""


def _merge(messages: list[WireMessage]) -> list[_MergedTurn]:
    # System messages sit outside the user/assistant alternation: we leave them out of the walk [INF].
    turns: list[_MergedTurn] = []
    for index, message in enumerate(messages):
        if message.role == "system":
            continue
        placed = [(index, position, block) for position, block in enumerate(message.blocks)]
        if turns and turns[-1].role == message.role:
            turns[-1].blocks.extend(placed)
        else:
            turns.append(_MergedTurn(message.role, placed))
    return turns


def _check_calls(turn: _MergedTurn, after: _MergedTurn | None) -> None:
    """E1 [CAP C1]: every `tool_use` ends its turn and is answered by the `tool_result`s opening the next."""
    calls = [(index, block.id) for index, _, block in turn.blocks if block.kind == "tool_use"]
    if not calls:
        return
    trailing: set[str] = set()
    for _, _, block in reversed(turn.blocks):
        if block.kind != "tool_use":
            break  # trigger (b): anything after a tool_use breaks "immediately after"
        trailing.add(block.id)
    answered: set[str] = set()
    results_later = False
    if after is not None and after.role == "user":
        for _, _, block in after.blocks:
            if block.kind != "tool_result":
                break  # trigger (c): results must come first in the next turn
            answered.add(block.tool_use_id)
        results_later = not answered and any(block.kind == "tool_result" for _, _, block in after.blocks)
    missing = [(index, call_id) for index, call_id in calls if call_id not in trailing or call_id not in answered]
    if not missing:
        return
    # [INF, as the reference recommends] N is the assistant message, or the one after it when the
    # assistant is messages[0] (C1 says `messages.1` there; C4 names the assistant).
    number = missing[0][0] or 1
    ids = ", ".join(call_id for _, call_id in missing)
    raise Rejection(
        f"messages.{number}: `tool_use` ids were found without `tool_result` blocks immediately after: "
        f"{ids}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
        Rule.MISSING_RESULT,
        message_index=after.blocks[0][0] if after is not None and results_later else missing[0][0],
    )


def _check_unique(turn: _MergedTurn, call_ids: set[str]) -> None:
    """A call id may appear once in the whole history (a turn appended twice repeats them all).

    [ISSUE] "messages.3.content.1: `tool_use` ids must be unique" (req_011Cb4iH...). Where the API
    makes this check is [INF]: we make it after E1 on the same turn, so a turn appended once per
    call still reports the missing results first.
    """
    for index, position, block in turn.blocks:
        if block.kind != "tool_use":
            continue
        if block.id in call_ids:
            raise Rejection(
                f"messages.{index}.content.{position}: `tool_use` ids must be unique",
                Rule.DUPLICATE_TURN,
                message_index=index,
                block_index=position,
            )
        call_ids.add(block.id)


def _check_results(turn: _MergedTurn, before: _MergedTurn | None) -> None:
    """E2 [CAP C4] and duplicates: each `tool_result` answers a call of the turn just before, once."""
    calls = set()
    if before is not None and before.role == "assistant":
        calls = {block.id for _, _, block in before.blocks if block.kind == "tool_use"}
    seen: set[str] = set()
    for index, position, block in turn.blocks:
        if block.kind != "tool_result":
            continue
        call_id = block.tool_use_id
        if call_id not in calls:
            raise Rejection(
                f"messages.{index}.content.{position}: unexpected `tool_use_id` found in `tool_result` "
                f"blocks: {call_id}. Each `tool_result` block must have a corresponding `tool_use` block "
                "in the previous message.",
                Rule.UNKNOWN_CALL_ID if calls else Rule.RESULT_WITHOUT_TURN,
                message_index=index,
                block_index=position,
            )
        if call_id in seen:
            raise Rejection(
                f"messages.{index}.content.{position}: each tool_use must have a single result. "
                f"Found multiple `tool_result` blocks with id: {call_id}",  # [ISSUE, several]
                Rule.DUPLICATE_RESULT,
                message_index=index,
                block_index=position,
            )
        seen.add(call_id)
