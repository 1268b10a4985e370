"""Hypothesis strategies for tool-loop conversations, responses and scenarios.

Instructors use them to write new graders the way the built-in ones are written: generate the
shapes a loop must handle (0 to 8 calls in a turn, odd ids and names, any result text) instead of
hand-picking a few.

    from hypothesis import given
    from sandbox import strategies as sst

    @given(sst.responses(calls=sst.integers(0, 8)))
    def test_my_apply(resp): ...
"""

from __future__ import annotations

import string
from typing import Any

from hypothesis import strategies as st

from ._scenario import Call, Scenario, Step
from ._types import Message, Request, Response, StopReason, Text, Tool, ToolCall, ToolResult, Usage

__all__ = [
    "arguments",
    "call_ids",
    "conversations",
    "integers",
    "requests",
    "responses",
    "result_texts",
    "scenarios",
    "tool_calls",
    "tool_names",
]

integers = st.integers
_UP_TO_EIGHT = st.integers(0, 8)
_ID_CHARS = string.ascii_letters + string.digits + "_-"


def tool_names() -> st.SearchStrategy[str]:
    """Names every provider accepts: ^[a-zA-Z0-9_-]{1,64}$, starting with a letter."""
    return st.builds(
        lambda head, tail: head + tail,
        st.sampled_from(string.ascii_letters),
        st.text(alphabet=_ID_CHARS, max_size=30),
    )


def call_ids() -> st.SearchStrategy[str]:
    """Ids within every provider's limits (OpenAI: 40 characters; Anthropic: ^[a-zA-Z0-9_-]+$)."""
    return st.text(alphabet=_ID_CHARS, min_size=1, max_size=40).filter(lambda value: not value.startswith("gcall_"))


_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False, width=64)
    | st.text(max_size=20)
)


def arguments() -> st.SearchStrategy[dict[str, Any]]:
    """JSON objects as a model would send them."""
    values = st.recursive(
        _scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
        max_leaves=6,
    )
    return st.dictionaries(st.text(alphabet=string.ascii_letters + "_", min_size=1, max_size=12), values, max_size=4)


def result_texts() -> st.SearchStrategy[str]:
    return st.text(min_size=1, max_size=60).filter(lambda value: value.strip() != "")


@st.composite
def tool_calls(draw: st.DrawFn, *, min_size: int = 1, max_size: int = 8) -> list[ToolCall]:
    """Calls of one turn, with distinct ids."""
    ids = draw(st.lists(call_ids(), min_size=min_size, max_size=max_size, unique=True))
    return [ToolCall(call_id, draw(tool_names()), draw(arguments())) for call_id in ids]


@st.composite
def responses(
    draw: st.DrawFn, *, calls: st.SearchStrategy[int] = _UP_TO_EIGHT, with_text: bool | None = None
) -> Response:
    """A model turn with N calls (and maybe prose), as `Client.complete` returns it."""
    count = draw(calls)
    turn_calls = draw(tool_calls(min_size=count, max_size=count)) if count else []
    text = (
        draw(st.text(min_size=1, max_size=40)) if (with_text if with_text is not None else draw(st.booleans())) else ""
    )
    parts: list[Text | ToolCall] = ([Text(text)] if text else []) + turn_calls
    stop = StopReason.TOOL_USE if turn_calls else StopReason.END_TURN
    return Response(Message("assistant", parts), stop, Usage(10, 5), model="hypothesis")


@st.composite
def conversations(draw: st.DrawFn, *, max_rounds: int = 3, max_calls: int = 8) -> list[Message]:
    """A valid tool-loop history: a question, then rounds of one assistant turn and one result per call.

    Call ids are unique across the whole conversation, as providers require.
    """
    messages = [Message("user", [Text(draw(result_texts()))])]
    used: set[str] = set()
    for _ in range(draw(st.integers(0, max_rounds))):
        resp = draw(responses(calls=st.integers(1, max_calls)).filter(lambda r: used.isdisjoint(_ids(r))))
        used.update(_ids(resp))
        messages.append(resp.message)
        for call in resp.tool_calls():
            messages.append(Message("tool", [ToolResult(call.id, draw(result_texts()), draw(st.booleans()))]))
    return messages


def _ids(resp: Response) -> set[str]:
    return {call.id for call in resp.tool_calls()}


@st.composite
def requests(draw: st.DrawFn, *, max_rounds: int = 3, max_calls: int = 8) -> Request:
    """A `Request` carrying a valid conversation, with every called tool declared."""
    messages = draw(conversations(max_rounds=max_rounds, max_calls=max_calls))
    names = sorted({call.name for message in messages for call in message.tool_calls()})
    tools = [Tool(name, "A tool.", {"type": "object", "properties": {}}) for name in names]
    return Request(model="hypothesis", messages=messages, tools=tools)


@st.composite
def scenarios(draw: st.DrawFn, *, max_steps: int = 5, max_calls: int = 4) -> Scenario:
    """Valid scenarios: some steps of calls, then an answer that quotes the results."""
    names = draw(st.lists(tool_names(), min_size=1, max_size=4, unique=True))
    steps = [
        Step(
            calls=[
                Call(draw(st.sampled_from(names)), draw(arguments())) for _ in range(draw(st.integers(1, max_calls)))
            ],
            repeat=draw(st.sampled_from(["once", "until_usable"])),
        )
        for _ in range(draw(st.integers(0, max_steps - 1)))
    ]
    steps.append(Step(text="Done: {results}"))
    return Scenario(
        draw(tool_names()),
        tools=[Tool(name, "A tool.") for name in names],
        steps=steps,
        description="Generated by sandbox.strategies.scenarios().",
    )
