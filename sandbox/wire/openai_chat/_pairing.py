"""The Chat Completions rules that pair tool calls with tool messages (C1-C5), checked after the
schema: dotted paths such as `messages.[3].role`, code null. Touches only validated messages; raises
nothing but `Rejection`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._base import Rule
from ._validate import Rejection

__all__ = ["check_pairing"]


def check_pairing(messages: list[dict[str, Any]]) -> None:
    """The tool-message ordering rules C1-C5, walking the history once (reference section 4.3)."""
    open_ids: list[str] = []  # ids the last assistant turn called, in order
    open_set: set[str] = set()  # the same, for lookups in constant time (a turn may make thousands)
    answered: dict[str, int] = {}  # id -> index of the tool message that answered it
    turn: int | None = None  # index of that assistant turn, while it is open
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id is None:
                raise Rejection(  # C3
                    "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.",
                    param=f"messages.[{index}].tool_call_id",
                )
            if turn is None:
                raise Rejection(  # C1, "preceeding" [sic]
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                    "message with 'tool_calls'.",
                    param=f"messages.[{index}].role",
                    rule=Rule.RESULT_WITHOUT_TURN,
                    index=index,
                )
            if call_id in answered:
                raise Rejection(  # C5
                    f"Invalid parameter: Duplicate value for 'tool_call_id' of '{call_id}', in "
                    f"messages[{answered[call_id]}] and messages[{index}].",
                    param=f"messages.[{index}].tool_call_id",
                    rule=Rule.DUPLICATE_RESULT,
                    index=index,
                )
            if call_id not in open_set:
                raise Rejection(  # C4: type, param and code [INF]
                    f"Invalid parameter: 'tool_call_id' of '{call_id}' not found in 'tool_calls' of previous message.",
                    param=f"messages.[{index}].tool_call_id",
                    rule=Rule.UNKNOWN_CALL_ID,
                    index=index,
                )
            answered[call_id] = index
            continue
        if turn is not None:
            _require_all_answered(open_ids, answered, turn)
        calls = message.get("tool_calls") if role == "assistant" else None
        if calls:
            open_ids, answered, turn = [call["id"] for call in calls], {}, index
            open_set = set(open_ids)
        else:
            turn = None
    if turn is not None:
        _require_all_answered(open_ids, answered, turn)


def _require_all_answered(open_ids: list[str], answered: Mapping[str, int], turn: int) -> None:
    missing = [call_id for call_id in open_ids if call_id not in answered]
    if missing:
        raise Rejection(  # C2; that the param names the assistant turn is [INF] (reference 4.1)
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            "'tool_call_id'. The following tool_call_ids did not have response messages: " + ", ".join(missing),
            param=f"messages.[{turn}].role",
            rule=Rule.MISSING_RESULT,
            index=turn,
        )


# -- schema ------------------------------------------------------------------------------------------
