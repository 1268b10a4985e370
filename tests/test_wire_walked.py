"""The shared pieces of the one-pass request walks (`sandbox/wire/_walked.py`): a name or id that
`plain_name` vouches for passes each provider's own pattern, and what it builds equals what the
constructors build."""

from __future__ import annotations

import pytest

from sandbox._types import Message, Text, Tool
from sandbox.wire._base import Conversation
from sandbox.wire._walked import plain_name, walked_conversation, walked_message, walked_tool
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
        if plain_name(name, most):
            assert accepts(name), (name, most)


def test_plain_name_vouches_for_the_common_names() -> None:
    assert plain_name("get_weather", 64)
    assert not plain_name("x" * 65, 64)
    assert not plain_name("café", 64)


def test_walked_objects_equal_the_constructors() -> None:
    parts = (Text("hi"),)
    assert walked_message("user", parts) == Message("user", parts)
    tool = walked_tool("f", "does f", {"type": "object"})
    assert tool == Tool("f", "does f", {"type": "object"})
    messages = [Message("user", parts)]
    made = walked_conversation("m", messages, ["messages[0]"], [tool], "auto", True, {"model": "m"})
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
