"""The shared pieces of the one-pass request walks (`sandbox/wire/_walked.py`): a name or id that
`plain_name` vouches for passes each provider's own pattern, what it builds equals what the
constructors build, and a message made once serves only requests that send the same one."""

from __future__ import annotations

import json

import pytest

from sandbox.messages._types import Message, Text, Tool, ToolResult
from sandbox.wire import _walked, get_wire_format
from sandbox.wire._base import Conversation
from sandbox.wire.anthropic._validate import _ID, _TOOL_NAME
from sandbox.wire.gemini._validate import _FUNCTION_NAME
from sandbox.wire.openai_chat._validate import _NAME_RE, MAX_NAME

NAMES = [
    "get_weather",
    "_private",
    "A1",
    "x" * 64,
    "x" * 65,
    "x" * 128,
    "x" * 129,
    "",
    "get-weather",
    "9lives",
    "a.b",
    "a:b",
    "café",
    "naïve_tool",
    "ｆｕｌｌ",
    "tab\t",
    "line\n",
    "two words",
    "toolu_01CZySLeAotVHQnRiC67CpPy",
]


@pytest.mark.parametrize("name", NAMES, ids=repr)
def test_plain_name_passes_every_pattern_it_vouches_for(name: str) -> None:
    patterns = [
        (lambda text: len(text) <= MAX_NAME and _NAME_RE.match(text) is not None, MAX_NAME),
        (lambda text: _TOOL_NAME.fullmatch(text) is not None, 128),
        (lambda text: _FUNCTION_NAME.fullmatch(text) is not None, 64),
        (lambda text: _ID.fullmatch(text) is not None, len(name)),
    ]
    for accepts, most in patterns:
        if _walked.plain_name(name, most):
            assert accepts(name), (name, most)


def test_plain_name_vouches_for_the_common_names() -> None:
    assert _walked.plain_name("get_weather", 64)
    assert not _walked.plain_name("x" * 65, 64)
    assert not _walked.plain_name("café", 64)


def test_walked_objects_equal_the_constructors() -> None:
    parts = (Text("hi"),)
    assert _walked.walked_message("user", parts) == Message("user", parts)
    tool = _walked.walked_tool("f", "does f", {"type": "object"})
    assert tool == Tool("f", "does f", {"type": "object"})
    messages = [Message("user", parts)]
    made = _walked.walked_request("m", messages, ["messages[0]"], [tool], "auto", True, {"model": "m"})
    expected = Conversation(
        model="m",
        messages=messages,
        paths=["messages[0]"],
        tools=[tool],
        tool_choice="auto",
        stream=True,
        raw={"model": "m"},
        cloud=None,
    )
    assert made == expected
    assert vars(made) == vars(expected)


def test_a_kept_message_is_the_one_its_role_and_text_make() -> None:
    assert _walked.text_message("user", "hi") is _walked.text_message("user", "hi")
    assert _walked.text_message("user", "hi") == Message("user", [Text("hi")])
    assert _walked.text_message("system", "hi") == Message("system", [Text("hi")])
    assert _walked.result_message("c1", "18C", False) == Message("tool", [ToolResult("c1", "18C", False)])
    assert _walked.result_message("c2", "18C", False) == Message("tool", [ToolResult("c2", "18C", False)])
    assert _walked.result_message("c1", "18C", True) == Message("tool", [ToolResult("c1", "18C", True)])
    assert _walked.result_message("c1", "19C", False) == Message("tool", [ToolResult("c1", "19C", False)])
    assert _walked.text_part("Let me check.") is _walked.text_part("Let me check.")
    assert _walked.text_part("Let me check.") == Text("Let me check.")
    assert _walked.text_part("Let me check!") == Text("Let me check!")


def _chat(system: str, result: str, call_id: str) -> bytes:
    call = {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]
    tools = [{"type": "function", "function": {"name": "f"}}]
    return json.dumps({"model": "m", "messages": messages, "tools": tools}).encode()


def test_each_request_reads_its_own_turns_when_others_sent_alike_ones() -> None:
    chat = get_wire_format("openai")
    first = chat.parse_request(_chat("hi", "18C", "call_1"), path_model=None, path_stream=False)
    second = chat.parse_request(_chat("be brief", "18C", "call_2"), path_model=None, path_stream=False)
    assert first.messages[0] == Message("system", [Text("hi")])
    assert first.messages[1] == Message("user", [Text("hi")])
    assert second.messages[0] == Message("system", [Text("be brief")])
    assert first.messages[3] == Message("tool", [ToolResult("call_1", "18C")])
    assert second.messages[3] == Message("tool", [ToolResult("call_2", "18C")])


def test_the_kept_messages_stay_within_their_bound() -> None:
    long = "x" * (_walked.SAME_LONGEST + 1)
    _walked.text_message("user", long)
    assert ("user", long) not in _walked._SAME
    for index in range(_walked.SAME_AT_MOST + 1):
        _walked.text_message("user", f"turn {index}")
    assert len(_walked._SAME) <= _walked.SAME_AT_MOST
    assert len(_walked._TEXTS) <= _walked.SAME_AT_MOST
