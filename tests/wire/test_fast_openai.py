"""The one-pass readers of OpenAI requests (`openai_chat._fast`, `openai_responses._fast`) against the
full checks they stand in for. On every body they either decline or give exactly what the full parse
gives: the same conversation, part by part (ids, call metadata and types included), and for Responses
the same walk state that kept state's continuations go on from. And they decline none of the valid
bodies the skyl client, the official SDK and kept state's chains send, so the speed they were written
for cannot quietly rot into the full path."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sandbox
from sandbox import skyl
from sandbox.engine._catalogue import catalogue
from sandbox.wire import WireError
from sandbox.wire._openai import call_arguments
from sandbox.wire.openai_chat._fast import fast_parse
from sandbox.wire.openai_chat._parse import checked
from sandbox.wire.openai_chat._validate import Rejection
from sandbox.wire.openai_responses import _parse as responses_parse
from sandbox.wire.openai_responses._chain import START, Walked
from sandbox.wire.openai_responses._fast import fast_item, fast_run
from sandbox.wire.openai_responses._parse import _Parser
from tests.corpus import copied, mutants, nodes, play_loop
from tests.sdk_drivers import DRIVERS, in_process_options, openai_responses_reasoning

CHAT, RESPONSES = "/v1/chat/completions", "/v1/responses"
WRONG: tuple[Any, ...] = (None, True, 0, 1.5, "x", [], {})


# -- what the two paths give -------------------------------------------------------------------------


def _shape(value: Any) -> Any:
    """`value` with every dataclass opened up, `compare=False` fields (a call's `meta`) and types included."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, {key: _shape(inner) for key, inner in vars(value).items()})
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_shape(inner) for inner in value])
    if isinstance(value, dict):
        return {key: _shape(inner) for key, inner in value.items()}
    return (type(value).__name__, value)


def _chat_full(data: dict[str, Any]) -> Any:
    try:
        return checked(data)
    except Rejection:
        return None


def _parser_state(parser: _Parser) -> Any:
    fields = ("turns", "open_assistant", "calls", "outputs", "item_ids", "first", "messages", "paths")
    return {name: _shape(getattr(parser, name, None)) for name in fields}


def _responses_full(data: dict[str, Any], walked: Walked) -> tuple[Any, Any]:
    parser = _Parser(data, walked)
    try:
        return parser.run(), _parser_state(parser)
    except WireError:
        return None, None


def assert_chat_agrees(body: bytes) -> bool:
    """Whether the one-pass reader took `body`; it fails the test if it took it and read it otherwise."""
    try:
        data = json.loads(body)
    except ValueError:
        return False
    if not isinstance(data, dict):
        return False
    before = json.dumps(data)
    fast = fast_parse(data)
    assert json.dumps(data) == before, "the one-pass reader changed the body"
    if fast is None:
        return False
    other = copied(data)
    full = _chat_full(other)
    assert full is not None, f"the one-pass reader took a body the checks refuse: {body[:300]!r}"
    assert _shape(fast) == _shape(full)
    assert fast.raw is data and full.raw is other
    pairs = zip(fast.tools, full.tools, data.get("tools") or (), other.get("tools") or (), strict=True)
    for mine, theirs, sent, resent in pairs:
        assert (mine.parameters is sent["function"].get("parameters")) == (
            theirs.parameters is resent["function"].get("parameters")
        ), "a tool's schema is the body's own object on one path and a copy on the other"
    return True


def assert_responses_agrees(data: Any, walked: Walked = START) -> bool:
    """As `assert_chat_agrees`, for a decoded Responses body walked after `walked`."""
    if not isinstance(data, dict):
        return False
    before = json.dumps(data)
    parser = _Parser(data, walked)
    fast = fast_run(parser)
    assert json.dumps(data) == before, "the one-pass walk changed the body"
    if fast is None:
        return False
    full, state = _responses_full(copied(data), walked)
    assert full is not None, f"the one-pass walk took a body the full walk refuses: {str(data)[:300]}"
    assert _shape(fast) == _shape(full)
    assert _parser_state(parser) == state
    assert fast.raw is data
    return True


def assert_items_agree(data: dict[str, Any], items: list[Any]) -> int:
    """Walk `items` one by one into two parsers of `data` (as `walk_answer` walks an answer's items):
    where `fast_item` takes an item, `_check_item` takes it to the same state; where it declines, it
    changed nothing. The number of items it took."""
    fast, full = _Parser(data), _Parser(data)
    taken = 0
    for index, item in enumerate(items):
        before = _parser_state(fast)
        if fast_item(fast, index, item):
            taken += 1
            full._check_item(index, item)  # raises if the one-pass walk took an item the full one refuses
            assert _parser_state(fast) == _parser_state(full)
            continue
        assert _parser_state(fast) == before, "a declined item changed the parser"
        try:
            full._check_item(index, item)
        except WireError:
            return taken
        fast._check_item(index, item)
    return taken


# -- valid bodies: the catalogue through skyl, and the official SDK -----------------------------------


def _catalogue_exchanges() -> Iterator[tuple[str, bytes, bytes]]:
    """(path, request, answer) of every 200 a catalogue loop got, for both OpenAI APIs."""
    for name in sorted(catalogue()):
        for provider in ("openai", "openai-responses"):
            for stream in (False, True):
                for reasoning in (False, True):
                    transport = sandbox.transport()
                    client = skyl.Client(provider, api_key="k", transport=transport)
                    scenario = sandbox.get_scenario(name)
                    req = skyl.Request(
                        model=name,
                        messages=[skyl.user_text(scenario.prompt)],
                        tools=list(scenario.tools),
                        reasoning=reasoning,
                    )
                    play_loop(client, req, stream=stream, result=lambda call: f"{call.name} ok")
                    for exchange in transport.journal:
                        if exchange.status == 200:
                            yield exchange.path, exchange.request_body, b"".join(exchange.chunks)


def _sdk_bodies() -> Iterator[tuple[str, bytes]]:
    for provider in ("openai", "openai-responses"):
        for name in ("single_call", "parallel_calls", "multi_step", "six_rounds"):
            for stream in (False, True):
                transport = sandbox.httpx2_transport()
                DRIVERS[provider](name, stream=stream, **in_process_options(provider, transport))
                yield from ((exchange.path, exchange.request_body) for exchange in transport.journal)
    for stream in (False, True):
        transport = sandbox.httpx2_transport()
        openai_responses_reasoning(
            "single_call_reasoning", stream=stream, http_client=httpx2.Client(transport=transport)
        )
        yield from ((exchange.path, exchange.request_body) for exchange in transport.journal)


EXCHANGES = list(_catalogue_exchanges())
VALID = sorted({(path, body) for path, body, _ in EXCHANGES} | set(_sdk_bodies()))


def test_the_valid_bodies_cover_both_apis_and_their_shapes() -> None:
    chat = [body for path, body in VALID if path == CHAT]
    responses = [body for path, body in VALID if path == RESPONSES]
    assert len(chat) > 100 and len(responses) > 100
    assert any(b'"tool_calls"' in body for body in chat) and any(b'"type":"reasoning"' in body for body in responses)
    assert any(b'"function_call_output"' in body for body in responses)


def test_the_one_pass_readers_take_every_valid_body_the_clients_send() -> None:
    declined = [
        (path, body[:200])
        for path, body in VALID
        if not (assert_chat_agrees(body) if path == CHAT else assert_responses_agrees(json.loads(body)))
    ]
    assert not declined, f"{len(declined)} of {len(VALID)} valid bodies went the slow way, e.g. {declined[:3]}"


def test_an_answers_own_items_are_walked_in_one_pass() -> None:
    """What `walk_answer` walks after every stored Responses answer: the fake's own output items."""
    walked = 0
    for path, request, answer in EXCHANGES:
        if path != RESPONSES or not answer.startswith(b"{"):
            continue
        data, output = json.loads(request), json.loads(answer)["output"]
        items = (data["input"] if isinstance(data["input"], list) else []) + output
        assert assert_items_agree(data, items) == len(items)
        walked += len(output)
    assert walked > 100


@pytest.mark.parametrize(
    "text", ['{"city":"Paris"}', '{"a":{"b":[1]}}', '{"a":NaN}', '{"a":1,"a":2.5}', "[1]", "nope", '"x"', "{}"]
)
def test_call_arguments_are_what_decoding_gives_and_a_fresh_object_each_time(text: str) -> None:
    """The memo behind both readers' call arguments: a caller may change what it was given."""
    try:
        decoded = json.loads(text)
    except ValueError:
        decoded = {}
    expected = decoded if isinstance(decoded, dict) else {}
    first = call_arguments(text)
    first.setdefault("added", 1)
    second = call_arguments(text)
    assert first is not second and json.dumps(second) == json.dumps(expected)
    for key, value in second.items():
        assert not isinstance(value, (dict, list)) or value is not first[key]


# -- mutations of the valid bodies -------------------------------------------------------------------


MUTATIONS: tuple[Any, ...] = (*WRONG, "", "c" * 65, "msg_1", "fc_1", "function", "output_text", "assistant")
"""What a node is replaced by: the wrong types, and the strings that are right somewhere else."""


def _distinct_shapes(path: str, limit: int) -> list[dict[str, Any]]:
    """Up to `limit` valid bodies of `path`, one per distinct shape (the texts and ids left out)."""
    seen: dict[str, dict[str, Any]] = {}
    for where, body in VALID:
        data = json.loads(body)
        if where == path and len(list(nodes(data))) <= 80:
            seen.setdefault(json.dumps(_skeleton(data), sort_keys=True), data)
    return list(seen.values())[:limit]


def _skeleton(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _skeleton(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_skeleton(inner) for inner in value]
    return type(value).__name__


@pytest.mark.slow
@pytest.mark.parametrize("path", [CHAT, RESPONSES])
def test_mutated_bodies_are_declined_or_read_exactly_as_the_full_parse_reads_them(path: str) -> None:
    taken = tried = 0
    for data in _distinct_shapes(path, 16):
        for mutant in mutants(data, MUTATIONS):
            tried += 1
            if path == CHAT:
                taken += assert_chat_agrees(json.dumps(mutant).encode())
            else:
                taken += assert_responses_agrees(mutant)
                if isinstance(mutant.get("input"), list):
                    assert_items_agree(mutant, mutant["input"])
    assert tried > 1000 and 0 < taken < tried  # some mutants are still valid (a text for a text), most not


# -- continuations: a chain's walk state, then only the new items --------------------------------------


def _recorded_continuations() -> list[tuple[dict[str, Any], Walked]]:
    """(fields, chain) of each Responses request kept state walked after a stored chain."""
    seen: list[tuple[dict[str, Any], Walked]] = []
    walk = responses_parse._walk

    def recording(data: dict[str, Any], walked: Walked) -> Any:
        if walked is not START:
            seen.append((copied(data), walked))
        return walk(data, walked)

    engine = sandbox.Engine()
    responses_parse._walk = recording  # type: ignore[assignment]
    try:
        for scenario in ("six_rounds", "parallel_calls", "single_call_reasoning"):
            tools = [
                {"type": "function", "name": tool.name, "parameters": dict(tool.parameters)}
                for tool in sandbox.get_scenario(scenario).tools
            ]
            body: dict[str, Any] = {"model": scenario, "input": [{"role": "user", "content": "Go."}], "tools": tools}
            body["reasoning"] = {"summary": "auto"}
            for _ in range(8):
                answer = json.loads(engine.handle("POST", RESPONSES, json.dumps(body).encode()).body)
                calls = [item for item in answer.get("output", []) if item["type"] == "function_call"]
                if not calls:
                    break
                outputs = [
                    {"type": "function_call_output", "call_id": call["call_id"], "output": "ok"} for call in calls
                ]
                body = {"model": scenario, "previous_response_id": answer["id"], "input": outputs, "tools": tools}
    finally:
        responses_parse._walk = walk  # type: ignore[assignment]
    return seen


@pytest.mark.slow
def test_continuations_are_walked_in_one_pass_and_their_mutants_as_the_full_walk_reads_them() -> None:
    continuations = _recorded_continuations()
    assert {data["model"] for data, _ in continuations} == {"six_rounds", "parallel_calls", "single_call_reasoning"}
    for data, walked in continuations:
        chain = _shape(walked)
        assert assert_responses_agrees(data, walked), f"a continuation went the slow way: {data}"
        for mutant in mutants(data, MUTATIONS):
            assert_responses_agrees(mutant, walked)
        assert _shape(walked) == chain, "a walk changed the chain it went on from, which others share"


# -- drawn bodies: tool loops in the shapes clients send, each field now and then a near miss ----------

_ODD: tuple[Any, ...] = (*WRONG, "", "c" * 41, "c" * 65, "bad name", "f\n", "msg_1", "fc_1", "rs_1", "call_a")


class _Draw:
    """Values for one drawn body: the valid one, or one time in `odds` a near miss or a wrong type."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.random = draw(st.randoms(use_true_random=True))  # seeded by hypothesis: a failure replays
        self.odds = self.random.choice([6, 30, 300])

    def __call__(self, valid: Any, *odd: Any) -> Any:
        if self.random.randrange(self.odds):
            return valid
        return self.random.choice([*odd, *_ODD])

    def maybe(self, key: str, value: Any, into: dict[str, Any]) -> None:
        """`into[key] = value`, or (one time in `odds`) no such key."""
        if self.random.randrange(self.odds):
            into[key] = value

    def chance(self, one_in: int) -> bool:
        return self.random.randrange(one_in) == 0

    def ids(self, count: int) -> list[str]:
        return [self(f"call_{self.random.choice('abc')}") for _ in range(count)]

    def answers(self, calls: list[str]) -> list[str]:
        """The call ids in some order, now and then one short or one repeated."""
        answered = self.random.sample(calls, len(calls))
        if answered and self.chance(6):
            answered = [*answered, answered[0]] if self.chance(2) else answered[1:]
        return answered


_ARGS = ('{"city":"Paris"}', "[1]", "nope", "{}", '{"a":NaN}')


@st.composite
def chat_bodies(draw: st.DrawFn) -> dict[str, Any]:
    pick = _Draw(draw)
    messages: list[Any] = []
    if pick.chance(2):
        messages.append({"role": pick("system", "developer", "bogus"), "content": pick("Be brief.")})
    messages.append({"role": pick("user"), "content": pick("Weather?", [{"type": "text", "text": "Weather?"}])})
    for _ in range(pick.random.randrange(4)):
        calls = pick.ids(pick.random.randrange(4))
        turn: dict[str, Any] = {"role": pick("assistant")}
        parts = [{"type": "text", "text": "x"}, {"type": "refusal", "refusal": "no"}]
        pick.maybe("content", pick(None if calls and pick.chance(2) else "Checking.", parts), turn)
        if calls:
            turn["tool_calls"] = [
                {
                    "id": call_id,
                    "type": pick("function", "custom"),
                    "function": {"name": pick("get_weather", "lookup-1"), "arguments": pick(*_ARGS)},
                }
                for call_id in calls
            ]
        messages.append(turn)
        answered = pick.answers(calls)
        for call_id in answered:
            result: dict[str, Any] = {"role": "tool", "tool_call_id": pick(call_id)}
            pick.maybe("content", pick("18C", [{"type": "text", "text": "18C"}], [{"type": "image_url"}]), result)
            messages.append(result)
        if pick.chance(3):
            messages.append({"role": "user", "content": pick("More?")})
    body: dict[str, Any] = {"model": pick("single_call"), "messages": pick(messages)}
    function: dict[str, Any] = {"name": pick("get_weather")}
    pick.maybe("description", pick("Weather.", "d" * 1025), function)
    pick.maybe("parameters", pick({"type": "object"}), function)
    if not pick.chance(4):
        body["tools"] = pick([{"type": pick("function", "custom"), "function": pick(function)}], [])
    for key, value in (
        ("tool_choice", pick("auto", "any", {"type": "function", "function": {"name": "get_weather"}})),
        ("stream", pick(True)),
        ("parallel_tool_calls", pick(False)),
        ("temperature", pick(0.5, 1)),
        ("max_completion_tokens", pick(1024)),
        ("stop", pick(["x"], "x")),
        ("seed", pick(1)),
    ):
        if pick.chance(4):
            body[key] = value
    if "stream" in body and pick.chance(2) or pick.chance(40):
        body["stream_options"] = pick({"include_usage": True})
    if pick.chance(40):
        body["bogus"] = 1
    return body


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chat_bodies())
def test_drawn_chat_bodies_are_declined_or_read_as_the_checks_read_them(data: dict[str, Any]) -> None:
    assert_chat_agrees(json.dumps(data).encode())


@st.composite
def responses_bodies(draw: st.DrawFn) -> dict[str, Any]:
    pick = _Draw(draw)
    items: list[Any] = []
    first = {"role": pick("user", "tool"), "content": pick("Weather?", [{"type": "input_text", "text": "Weather?"}])}
    pick.maybe("type", pick("message"), first)
    items.append(first)
    for round_ in range(pick.random.randrange(4)):
        if pick.chance(3):
            summary = pick([{"type": "summary_text", "text": "Thinking."}], [{"text": 3}])
            item: dict[str, Any] = {"type": "reasoning", "id": pick(f"rs_{round_}"), "summary": summary}
            pick.maybe("encrypted_content", pick("gAAAA"), item)
            items.append(item)
        if pick.chance(2):
            part = {"type": pick("output_text", "input_text", "refusal"), "text": pick("Checking.")}
            message = {"type": "message", "role": pick("assistant"), "content": pick([part], "Checking.", [])}
            pick.maybe("id", pick(f"msg_{round_}"), message)
            items.append(message)
        calls = pick.ids(pick.random.randrange(4))
        for position, call_id in enumerate(calls):
            call = {"type": "function_call", "call_id": call_id, "name": pick("get_weather"), "arguments": pick(*_ARGS)}
            pick.maybe("id", pick(f"fc_{round_}_{position}"), call)
            items.append(call)
        answered = pick.answers(calls)
        for call_id in answered:
            output = pick("18C", [{"type": "input_text", "text": "18C"}, {"type": "input_image"}], [{"type": "x"}])
            result = {"type": "function_call_output", "call_id": pick(call_id), "output": output}
            if pick.chance(4):
                result["id"] = pick(f"fco_{call_id}")
            items.append(result)
    body: dict[str, Any] = {"model": pick("single_call")}
    pick.maybe("input", pick(items, "Weather?"), body)
    tool = {"type": pick("function", "web_search"), "name": pick("get_weather"), "strict": pick(False)}
    pick.maybe("parameters", pick({"type": "object"}), tool)
    pick.maybe("description", pick("Weather."), tool)
    if not pick.chance(4):
        body["tools"] = pick([tool], [], [{"type": "web_search"}, tool])
    for key, value in (
        ("instructions", pick("Be brief.")),
        ("tool_choice", pick("auto", "any", {"type": "function", "name": "get_weather"}, {"type": "function"})),
        ("stream", pick(True)),
        ("store", pick(False)),
        ("max_output_tokens", pick(1024, 15, 16)),
        ("temperature", pick(0.5, 1)),
        ("reasoning", {"summary": "auto"}),
    ):
        if pick.chance(4):
            body[key] = value
    for key, value in (("previous_response_id", "resp_1"), ("conversation", {"id": "conv_1"}), ("messages", [])):
        if pick.chance(40):
            body[key] = value
    return body


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(responses_bodies())
def test_drawn_responses_bodies_are_declined_or_walked_as_the_full_walk_walks_them(data: dict[str, Any]) -> None:
    assert_responses_agrees(data)
    if isinstance(data.get("input"), list):
        assert_items_agree(data, data["input"])


@pytest.mark.parametrize(("bodies", "agrees"), [(chat_bodies, "chat"), (responses_bodies, "responses")])
def test_the_drawn_bodies_reach_the_one_pass_readers(bodies: Any, agrees: str) -> None:
    """The drawn tests above judge the readers only on bodies they take: many must be such."""
    taken: list[bool] = []

    @settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(bodies())
    def draw(data: dict[str, Any]) -> None:
        taken.append(
            assert_chat_agrees(json.dumps(data).encode()) if agrees == "chat" else assert_responses_agrees(data)
        )

    draw()
    assert sum(taken) > len(taken) // 5
