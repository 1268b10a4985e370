"""Learners' own loops in the room: one mistake is counted under one rule, whoever made it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.room_server import APPEND_ONCE, TURN_FIRST, Learner, Served, run, serving_room

HEADERS = {"anthropic-version": "2023-06-01"}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with serving_room(tmp_path / "room.db") as room:
        yield room


@pytest.mark.parametrize("prose", ["", "Let me check."], ids=["no-prose", "prose"])
def test_room_assistant_text_in_an_own_anthropic_loop_counts_under_the_graders_rule(served: Served, prose: str) -> None:
    """`skyl.assistant_text(resp.text())` in place of resp.message: the grader names it TURN_FIRST."""
    Learner.join(served.room, "graded").post(run(**{"01_apply_tool_results": (1, 1, TURN_FIRST)}))
    ada = Learner.join(served.room, "ada")
    headers = {**HEADERS, "x-api-key": ada.api_key}
    body: dict[str, Any] = {
        "model": "single_call",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
    }
    turn = httpx.post(f"{served.base}/v1/messages", json=body, headers=headers, timeout=10).json()
    call = next(block for block in turn["content"] if block["type"] == "tool_use")
    body["messages"] += [
        {"role": "assistant", "content": [{"type": "text", "text": prose}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "18C"}]},
    ]
    refused = httpx.post(f"{served.base}/v1/messages", json=body, headers=headers, timeout=10)
    assert refused.status_code == 400
    rules = served.instructor("/api/state").json()["rules"]
    assert [(item["rule"], item["names"]) for item in rules] == [(TURN_FIRST, ["ada", "graded"])]


def test_room_a_turn_appended_twice_in_an_own_chat_loop_counts_under_the_graders_rule(served: Served) -> None:
    """The grader diagnoses a repeated turn as "once per turn"; the provider calls it a missing result."""
    Learner.join(served.room, "graded").post(run(**{"01_apply_tool_results": (1, 1, APPEND_ONCE)}))
    ada = Learner.join(served.room, "ada")
    headers = {"authorization": f"Bearer {ada.api_key}"}
    body: dict[str, Any] = {
        "model": "single_call",
        "messages": [{"role": "user", "content": "Weather in Paris?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
    }
    turn = httpx.post(f"{served.base}/v1/chat/completions", json=body, headers=headers, timeout=10).json()
    message = turn["choices"][0]["message"]
    result = {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": "18C"}
    body["messages"] += [message, message, result]
    assert httpx.post(f"{served.base}/v1/chat/completions", json=body, headers=headers, timeout=10).status_code == 400
    rules = served.instructor("/api/state").json()["rules"]
    assert [(item["rule"], item["names"]) for item in rules] == [(APPEND_ONCE, ["ada", "graded"])]
