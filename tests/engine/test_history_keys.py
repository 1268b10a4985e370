"""The repeat guard's history keys (`sandbox.engine._repeats.history_keys`): what tells two histories apart."""

from __future__ import annotations

from sandbox.engine._repeats import Digested, history_keys
from sandbox.messages._types import Message, Text, ToolCall, ToolResult


def _history(text: str = "hi", arguments: dict[str, object] | None = None, result: str = "18C") -> list[Message]:
    call = ToolCall("call_1", "get_weather", arguments if arguments is not None else {"city": "Paris", "unit": "C"})
    return [
        Message("user", [Text(text)]),
        Message("assistant", [Text("Let me check."), call]),
        Message("tool", [ToolResult("call_1", result)]),
    ]


def test_history_keys_tell_apart_what_the_model_reads() -> None:
    key, before = history_keys("scope", _history())
    assert key == history_keys("scope", _history())[0]
    assert before == history_keys("scope", _history()[:1])[0]  # the key before the last model turn
    assert key != history_keys("scope", _history(text="ho"))[0]
    assert key != history_keys("scope", _history(result="19C"))[0]
    assert key != history_keys("other", _history())[0]


def test_history_keys_ignore_the_order_of_an_accepted_calls_arguments() -> None:
    """The replay matched the call's arguments to the script's as dicts: their key order is no new request."""
    key = history_keys("scope", _history())[0]
    assert key == history_keys("scope", _history(arguments={"unit": "C", "city": "Paris"}))[0]


def test_history_keys_go_on_from_a_digested_start() -> None:
    history = _history()
    start, before = history_keys("scope", history[:2])
    resumed = history_keys("scope", history, Digested("scope", 2, start, before))
    assert resumed == history_keys("scope", history)
