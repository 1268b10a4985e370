"""Hypothesis strategies for tool-loop conversations, responses and scenarios.

Instructors use them to write new graders the way the built-in ones are written: generate the
shapes a loop must handle (0 to 8 calls in a turn, odd ids and names, any result text) instead of
hand-picking a few.

    from hypothesis import given
    from sandbox import strategies as sst

    @given(sst.responses(calls=sst.integers(0, 8)))
    def test_my_apply(resp): ...

A grader that talks to the sandbox draws a whole script, then the results a loop is handed:

    @given(sst.scenarios(rounds=sst.integers(1, 1), calls=sst.integers(0, 8)), st.data())
    def test_apply(scenario, data):
        client = skyl.Client("gemini", transport=sandbox.transport(scenario))
        req = skyl.Request(model=scenario.name, messages=[skyl.user_text("Go.")], tools=list(scenario.tools))
        resp = client.complete(req)
        results = data.draw(sst.result_maps(resp.tool_calls()))   # some missing, some extra, any order

Every strategy takes keyword-only options and rejects impossible ones with `InvalidArgument`.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Callable, Sequence
from datetime import date
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from .engine._scenario import Call, Repeat, Scenario, Step
from .messages._types import Message, Request, Response, StopReason, Text, Tool, ToolCall, ToolResult, Usage

__all__ = [
    "arguments",
    "call_ids",
    "conversations",
    "integers",
    "plausible_arguments",
    "plausible_tool_names",
    "requests",
    "responses",
    "result_maps",
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


_TOOL_NAMES = tool_names()


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


_ARGUMENTS = arguments()

# What a learner reads in a transcript should look like a real tool call: get_weather(city='Lisbon').
_CITIES = ("Paris", "Tokyo", "Lisbon", "Oslo", "Nairobi", "Lima", "Montréal", "São Paulo", "Zürich", "Kraków")
_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "city": st.sampled_from(_CITIES),
    "origin": st.sampled_from(_CITIES),
    "destination": st.sampled_from(_CITIES),
    "date": st.dates(min_value=date(2026, 1, 1), max_value=date(2026, 12, 31)).map(date.isoformat),
    "days": st.integers(1, 10),
    "units": st.sampled_from(["metric", "imperial"]),
    "order_id": st.integers(1000, 9999).map(lambda number: f"ord_{number}"),
    "cuisine": st.sampled_from(["vegetarian", "ramen", "tapas", "pizza"]),
    "limit": st.integers(1, 20),
    "amount": st.integers(1, 5000),
    "from_currency": st.sampled_from(["EUR", "USD", "JPY", "GBP"]),
    "to_currency": st.sampled_from(["EUR", "USD", "JPY", "GBP"]),
    "symbol": st.sampled_from(["AAPL", "MSFT", "SAP", "TM"]),
    "query": st.sampled_from(["refund policy", "reset password", "opening hours", "API rate limits"]),
    "to": st.sampled_from(["ana@example.com", "li.wei@example.org", "sam@example.net"]),
    "subject": st.sampled_from(["Your order", "Meeting notes", "Trip itinerary"]),
}
# Each tool's parameters: the first is always sent, the others sometimes.
_TOOLS: dict[str, tuple[str, ...]] = {
    "get_weather": ("city", "units"),
    "get_time": ("city",),
    "get_forecast": ("city", "date", "days"),
    "search_flights": ("origin", "destination", "date"),
    "lookup_order": ("order_id",),
    "find_restaurants": ("city", "cuisine", "limit"),
    "convert_currency": ("amount", "from_currency", "to_currency"),
    "get_stock_price": ("symbol", "date"),
    "search_docs": ("query", "limit"),
    "send_email": ("to", "subject"),
}


_Arguments = st.SearchStrategy[dict[str, Any]]


@functools.cache
def plausible_tool_names() -> st.SearchStrategy[str]:
    """Tool names as people name tools (`get_weather`, `lookup_order`): what graders show learners."""
    return st.sampled_from(sorted(_TOOLS))


@functools.cache
def plausible_arguments(tool: str | None = None) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments that read like a real call's (`city='Lisbon'`, `date='2026-03-14'`, `order_id='ord_1042'`)
    and survive every wire format's JSON unchanged: `tool`'s own parameters when it is one of
    `plausible_tool_names()`, else one to three of them all. Pass the function itself as
    `scenarios(call_arguments=...)` to draw each call's arguments for its tool. For the odd shapes a
    model can send (nested objects, any unicode, floats), use `arguments()`.

    One strategy object per tool, made once: hypothesis validates a strategy the first time it draws
    from it, and a call drawn from a fresh one each time paid that again for every call of a scenario."""
    if tool in _TOOLS:
        first, *rest = _TOOLS[tool]
        optional = {key: _VALUES[key] for key in rest}
        drawn = st.fixed_dictionaries({first: _VALUES[first]}, optional=optional)
        return drawn.map(lambda args: {key: args[key] for key in _TOOLS[tool] if key in args})  # in signature order
    keys = st.lists(st.sampled_from(sorted(_VALUES)), min_size=1, max_size=3, unique=True)
    return keys.flatmap(lambda chosen: st.fixed_dictionaries({key: _VALUES[key] for key in chosen}))


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
def scenarios(
    draw: st.DrawFn,
    *,
    max_steps: int = 5,
    max_calls: int = 4,
    rounds: st.SearchStrategy[int] | None = None,
    calls: st.SearchStrategy[int] | None = None,
    repeat: st.SearchStrategy[Repeat] | None = None,
    call_arguments: st.SearchStrategy[dict[str, Any]]
    | Callable[[str], st.SearchStrategy[dict[str, Any]]]
    | None = None,
    stop: st.SearchStrategy[StopReason | None] | None = None,
    unique_calls: bool = False,
    names: st.SearchStrategy[str] | None = None,
) -> Scenario:
    """Valid scenarios: some rounds of calls, then an answer that quotes the results.

    `rounds` (default 0 to `max_steps - 1`) is the number of steps with calls, `calls` (default 1 to
    `max_calls`) the calls in each; `calls` may draw 0, which makes that step the answer and ends the
    script there. `repeat` draws each step's repeat mode (default `once` or `until_usable`);
    `call_arguments` each call's arguments (default `arguments()`), or is a function from the tool's
    name to that strategy (`plausible_arguments`); `stop`, when given, each step's
    stop reason, answer included, however little it agrees with the calls. With `unique_calls`, no
    two calls of a step share a name and arguments, so a grader can key outputs by call. `names`
    draws the tool names (default `tool_names()`).

    `tool_outputs` holds a usable output for every call the script makes, distinct per call, so a
    grader's `run` can answer from it and a result sent to the wrong call shows; `prompt` is set, so
    `user_text(scenario.prompt)` is a message every provider accepts.
    """
    if max_steps < 1 or max_calls < 1:
        raise InvalidArgument(f"max_steps={max_steps!r} and max_calls={max_calls!r} must both be at least 1.")
    tools = draw(st.lists(names if names is not None else _TOOL_NAMES, min_size=1, max_size=4, unique=True))
    rounds = rounds if rounds is not None else st.integers(0, max_steps - 1)
    calls = calls if calls is not None else st.integers(1, max_calls)
    repeat = repeat if repeat is not None else _REPEATS
    call_arguments = call_arguments if call_arguments is not None else _ARGUMENTS
    steps: list[Step] = []
    for _ in range(draw(rounds)):
        count = draw(calls)
        if count < 0:
            raise InvalidArgument(f"calls drew {count!r}: a step makes 0 or more calls.")
        if count == 0:
            break
        made = draw(_step_calls(tuple(tools), call_arguments, count, unique_calls))
        steps.append(Step(calls=made, repeat=draw(repeat), stop=draw(stop) if stop is not None else None))
    steps.append(Step(text="Done: {results}", stop=draw(stop) if stop is not None else None))
    keys = sorted({repr(call) for step in steps for call in step.calls})
    return Scenario(
        draw(_TOOL_NAMES),
        tools=[Tool(name, "A tool.") for name in tools],
        steps=steps,
        description="Generated by sandbox.strategies.scenarios().",
        prompt="Use the tools you need, then answer.",
        tool_outputs={key: f"output {number} of {len(keys)}" for number, key in enumerate(keys, 1)},
    )


_REPEATS: st.SearchStrategy[Repeat] = st.sampled_from(["once", "until_usable"])
_CallArguments = st.SearchStrategy[dict[str, Any]] | Callable[[str], st.SearchStrategy[dict[str, Any]]]


@functools.lru_cache(maxsize=4096)
def _step_calls(
    tools: tuple[str, ...], call_arguments: _CallArguments, count: int, unique_calls: bool
) -> st.SearchStrategy[list[Call]]:
    """The `count` calls of one step, as a strategy made once per shape. What it draws is what a fresh
    strategy of the same shape draws (hypothesis draws by structure, never by object), without
    validating a fresh one on every draw."""
    if isinstance(call_arguments, st.SearchStrategy):
        draw_call: st.SearchStrategy[Call] = st.builds(Call, st.sampled_from(tools), call_arguments)
    else:
        for_tool = call_arguments
        draw_call = st.sampled_from(tools).flatmap(lambda name: _calls_of(for_tool, name))
    return st.lists(draw_call, min_size=count, max_size=count, unique_by=repr if unique_calls else None)


@functools.lru_cache(maxsize=4096)
def _calls_of(for_tool: Callable[[str], st.SearchStrategy[dict[str, Any]]], name: str) -> st.SearchStrategy[Call]:
    return for_tool(name).map(lambda args: Call(name, args))


@st.composite
def result_maps(
    draw: st.DrawFn,
    calls: Sequence[ToolCall],
    *,
    outputs: Callable[[ToolCall], str] | None = None,
    missing: bool = True,
    extra: bool = True,
) -> dict[str, str]:
    """What a loop might be handed as `results` for `calls`: call id -> output, in a random order.

    With `missing`, a random subset of the calls has no entry (a call whose tool produced nothing);
    with `extra`, the dict may also hold ids that no call in `calls` has. `outputs(call)` gives each
    call's output (default: drawn from `result_texts()`). Which ids are missing is for the caller to
    compute: `[call.id for call in calls if call.id not in results]`.
    """
    if len({call.id for call in calls}) != len(calls):
        raise InvalidArgument("result_maps() needs calls with distinct ids, as one turn's calls have.")
    answered = [call for call in calls if not missing or draw(st.booleans())]
    entries = [(call.id, outputs(call) if outputs else draw(result_texts())) for call in answered]
    if extra:
        taken = {call.id for call in calls}
        strangers = draw(st.lists(call_ids().filter(lambda value: value not in taken), max_size=3, unique=True))
        entries += [(stranger, draw(result_texts())) for stranger in strangers]
    return dict(draw(st.permutations(entries)))
