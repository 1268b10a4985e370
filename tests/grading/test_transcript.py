"""Transcripts: one line per message, the offending one marked, long conversations shortened."""

from __future__ import annotations

from sandbox.grading.judge._transcript import describe_call, quote, render, reply_line
from sandbox.skyl import Message, Text, ToolCall, assistant_text, tool_result_message, user_text

CALL = ToolCall("call_1", "get_weather", {"city": "Paris"})


def test_each_role_on_one_line_with_ids() -> None:
    lines = render(
        [
            user_text("What's the weather\nin Paris?"),
            Message("assistant", [Text("Checking."), CALL]),
            tool_result_message("call_1", "18C, clear", is_error=True),
            assistant_text("It is 18C."),
        ],
        mark=2,
    )
    assert lines == [
        '    0  user       "What\'s the weather in Paris?"',
        "    1  assistant  \"Checking.\" calls get_weather(city='Paris') [call_1]",
        '->  2  tool       result for call_1: "18C, clear" (is_error)',
        '    3  assistant  "It is 18C." (no tool calls)',
    ]


def test_long_conversations_keep_the_start_the_mark_and_the_end() -> None:
    messages = [user_text(f"message {index}") for index in range(40)]
    lines = render(messages, mark=20)
    assert lines[0].endswith('"message 0"') and lines[-1].endswith('"message 39"')
    assert any(line.startswith("-> 20") for line in lines)
    assert "   ..  (16 more messages)" in lines
    assert len(lines) < 16


def test_text_is_quoted_on_one_line_and_shortened() -> None:
    assert quote("a\n b") == '"a b"'
    assert quote("x" * 100, width=10) == '"xxxxxxx..."'


def test_calls_and_replies_read_like_calls() -> None:
    assert describe_call(CALL, with_id=False) == "get_weather(city='Paris')"
    assert reply_line(Message("assistant", [CALL])) == "    =  reply      calls get_weather(city='Paris') [call_1]"
