"""Each wire format's one reader, as a property: every body the skyl client and the official SDKs send
is read, and the reader never changes it; every other body, a node of a valid one changed, dropped or
repeated, or a tool loop drawn with near misses, is either read or refused with the provider's own
error (its status, and its message in the provider's envelope), never anything else.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sandbox
from sandbox import skyl
from sandbox.engine._catalogue import catalogue
from sandbox.engine._engine import Engine, Exchange
from sandbox.wire import PROVIDERS, Conversation, ErrorResponse, get_wire_format, route
from sandbox.wire._openai import call_arguments
from sandbox.wire.openai_responses import _parse as responses_parse
from sandbox.wire.openai_responses._turns import START, Walked
from tests import sdk_drivers
from tests.corpus import copied, mutants, nodes, play_loop

MODEL = "single_call"
RESPONSES = "/v1/responses"
WRONG: tuple[Any, ...] = (None, True, 0, 1.5, "x", "", [], {}, "true", -1, "c" * 65, "msg_1", "fc_1", "function")
"""What a node is replaced by: the wrong types, and values that are right somewhere else."""


def read(provider: str, body: bytes) -> Conversation | ErrorResponse:
    """The reader's conversation, or the provider's error it refused the body with. Anything else it
    raises fails the test."""
    try:
        return get_wire_format(provider).parse_request(body, path_model=MODEL, path_stream=False)
    except ErrorResponse as error:
        assert 400 <= error.status < 500, f"{error.status}: {error.message}"
        assert json.loads(error.body)["error"]["message"] == error.message, "not in the provider's envelope"
        return error


def accepted(provider: str, body: bytes) -> bool:
    """Whether the reader read `body`; it fails the test if it changed the body it read."""
    got = read(provider, body)
    if isinstance(got, ErrorResponse):
        return False
    assert got.raw == json.loads(body), "the reader changed the decoded body"
    assert len(got.paths) == len(got.messages)
    return True


# -- the bodies clients send ------------------------------------------------------------------------


def _recorded(engine: Engine, into: list[tuple[str, bytes]]) -> Engine:
    handle = engine.handle

    def recorded(method: str, path: str, body: bytes, **options: Any) -> Exchange:
        exchange = handle(method, path, body, **options)
        if exchange.status == 200:
            into.append((path, body))
        return exchange

    engine.handle = recorded  # type: ignore[method-assign]
    return engine


def _by_provider(sent: list[tuple[str, bytes]]) -> dict[str, list[bytes]]:
    """Each distinct body, by provider."""
    bodies: dict[str, list[bytes]] = {provider: [] for provider in PROVIDERS}
    for path, body in dict.fromkeys(sent):
        found = route(path.split("?")[0])
        if found is not None:
            bodies[found.provider].append(body)
    return bodies


@pytest.fixture(scope="module")
def skyl_bodies() -> dict[str, list[bytes]]:
    """Every distinct body the skyl client sends over the catalogue (plain and streamed, reasoning
    asked or not) that the engine answered with 200."""
    sent: list[tuple[str, bytes]] = []
    for name in sorted(catalogue()):
        for provider in PROVIDERS:
            for stream in (False, True):
                for reasoning in (False, True):
                    engine = _recorded(Engine(), sent)
                    scenario = engine.scenarios[name]
                    client = skyl.Client(provider, api_key="k", transport=sandbox.transport(engine=engine))
                    req = skyl.Request(
                        model=name,
                        messages=[skyl.user_text(scenario.prompt)],
                        tools=list(scenario.tools),
                        reasoning=reasoning,
                    )
                    play_loop(client, req, stream=stream, result=lambda call: f"{call.name} ok")
    return _by_provider(sent)


PLAIN = ("single_call", "parallel_calls", "multi_step")
REASONING = ("multi_step_reasoning",)
SDK_LOOPS: list[tuple[Callable[..., Any], dict[str, Any], tuple[str, ...]]] = [
    (sdk_drivers.DRIVERS["openai"], {}, PLAIN),
    (sdk_drivers.DRIVERS["openai"], {"stream": True}, PLAIN),
    (sdk_drivers.DRIVERS["openai-responses"], {}, PLAIN),
    (sdk_drivers.DRIVERS["openai-responses"], {"stream": True}, PLAIN),
    (sdk_drivers.anthropic_messages, {}, PLAIN),
    (sdk_drivers.anthropic_messages, {"stream": True}, PLAIN),
    (sdk_drivers.anthropic_thinking, {}, REASONING),
    (sdk_drivers.anthropic_thinking, {"stream": True}, REASONING),
    (sdk_drivers.gemini, {}, PLAIN),
    (sdk_drivers.gemini, {"stream": True}, PLAIN),
    (sdk_drivers.gemini_thinking, {}, REASONING),
    (sdk_drivers.gemini_thinking, {"stream": True}, REASONING),
    (sdk_drivers.gemini_chat, {}, (*PLAIN, *REASONING)),
]


@pytest.fixture(scope="module")
def sdk_bodies() -> dict[str, list[bytes]]:
    """What the official SDKs send in their users' own tool loops, reasoning included."""
    sent: list[tuple[str, bytes]] = []
    for driver, options, scenarios in SDK_LOOPS:
        for scenario in scenarios:
            transport = sandbox.httpx2_transport(engine=_recorded(Engine(), sent))
            driver(scenario, **options, **sdk_drivers.in_process_options(driver.__name__, transport))
    for stream in (False, True):
        transport = sandbox.httpx2_transport(engine=_recorded(Engine(), sent))
        sdk_drivers.openai_responses_reasoning(
            "single_call_reasoning", stream=stream, http_client=httpx2.Client(transport=transport)
        )
    return _by_provider(sent)


@pytest.mark.slow
@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_body_the_skyl_client_sends_is_read(provider: str, skyl_bodies: dict[str, list[bytes]]) -> None:
    bodies = skyl_bodies[provider]
    assert len(bodies) > 50, "the catalogue sent fewer bodies than it should"
    refused = [body for body in bodies if not accepted(provider, body)]
    assert not refused, f"{len(refused)} of {len(bodies)} refused, first: {refused[0][:400]!r}"


@pytest.mark.slow
@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_body_the_official_sdk_sends_is_read(provider: str, sdk_bodies: dict[str, list[bytes]]) -> None:
    bodies = sdk_bodies[provider]
    assert len(bodies) >= 10
    refused = [body for body in bodies if not accepted(provider, body)]
    assert not refused, f"{len(refused)} of {len(bodies)} refused, first: {refused[0][:400]!r}"


CURL = {  # the first request of each provider's own quickstart, as a learner types it
    "openai": {"model": MODEL, "messages": [{"role": "user", "content": "Hello!"}]},
    "openai-responses": {"model": MODEL, "input": "Tell me a three sentence bedtime story about a unicorn."},
    "anthropic": {"model": MODEL, "max_tokens": 1024, "messages": [{"role": "user", "content": "Hello, world"}]},
    "gemini": {"contents": [{"parts": [{"text": "Explain how AI works in a few words"}]}]},
}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_quickstart_body_is_read(provider: str) -> None:
    assert accepted(provider, json.dumps(CURL[provider]).encode())


# -- every other body: read, or refused in the provider's words --------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("provider", PROVIDERS)
def test_each_mutation_of_a_valid_body_is_read_or_refused_with_the_provider_s_error(
    provider: str, skyl_bodies: dict[str, list[bytes]]
) -> None:
    """Each node of each short valid body replaced by a wrong value, dropped, or repeated: many such
    bodies are still valid (a text for a text), most are not."""
    counts = {True: 0, False: 0}
    short = [body for body in skyl_bodies[provider] if len(list(nodes(json.loads(body)))) <= 40]
    for body in short[:30]:
        for mutant in mutants(json.loads(body), WRONG):
            counts[accepted(provider, json.dumps(mutant).encode())] += 1
    assert counts[True] > 300 and counts[False] > 1000, counts


EXTRA_KEYS = (
    *("x", "type", "text", "thread", "cache_control", "role", "content", "is_error", "id", "name"),
    *("function_call", "function_response", "thought_signature", "thought", "inlineData", "response_json_schema"),
    *("parameters_json_schema", "system_instruction", "tool_config", "allowed_function_names", "mode", "parts"),
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-3, 3) | st.sampled_from(["", "x", "user", "text"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["type", "text", "x"]), inner),
    max_leaves=6,
)


@pytest.mark.slow
@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.parametrize("provider", PROVIDERS)
def test_random_changes_to_a_valid_body_are_read_or_refused_with_the_provider_s_error(
    provider: str, skyl_bodies: dict[str, list[bytes]], data: st.DataObject
) -> None:
    """Up to three nodes of any valid body replaced by arbitrary JSON or dropped, or a key added to an
    object (an unknown one, or another spelling of a known one)."""
    changed = json.loads(data.draw(st.sampled_from(skyl_bodies[provider])))
    for _ in range(data.draw(st.integers(1, 3))):
        *head, last = data.draw(st.sampled_from(list(nodes(changed))[1:]))
        parent = changed
        for key in head:
            parent = parent[key]
        action = data.draw(st.sampled_from(["drop", "replace", "add"]))
        if action == "drop":
            del parent[last]
        elif action == "replace":
            parent[last] = data.draw(_JSON)
        elif isinstance(parent[last], dict):
            parent[last][data.draw(st.sampled_from(EXTRA_KEYS))] = data.draw(_JSON)
    accepted(provider, json.dumps(changed).encode())


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
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chat_bodies())
def test_drawn_chat_bodies_are_read_or_refused_with_the_provider_s_error(data: dict[str, Any]) -> None:
    accepted("openai", json.dumps(data).encode())


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(responses_bodies())
def test_drawn_responses_bodies_are_read_or_refused_with_the_provider_s_error(data: dict[str, Any]) -> None:
    accepted("openai-responses", json.dumps(data).encode())


@pytest.mark.slow
@pytest.mark.parametrize(("bodies", "provider"), [(chat_bodies, "openai"), (responses_bodies, "openai-responses")])
def test_the_drawn_bodies_are_often_valid(bodies: Any, provider: str) -> None:
    """The drawn tests above try the reader's acceptance as well as its errors: many bodies are valid."""
    taken: list[bool] = []

    @settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(bodies())
    def draw(data: dict[str, Any]) -> None:
        taken.append(accepted(provider, json.dumps(data).encode()))

    draw()
    assert len(taken) // 5 < sum(taken) < len(taken)


# -- Responses continuations: a chain's walk, then only the new items --------------------------------


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
def test_a_continuation_s_mutants_never_change_the_chain_they_go_on_from() -> None:
    """A stored chain's walk is shared by every continuation of it: reading one, valid or not, leaves
    the chain as it was."""
    continuations = _recorded_continuations()
    assert {data["model"] for data, _ in continuations} == {"six_rounds", "parallel_calls", "single_call_reasoning"}
    for data, walked in continuations:
        before = repr(walked)
        responses_parse.parse_continuing(copied(data), walked)
        for mutant in mutants(data, WRONG):
            try:
                responses_parse.parse_continuing(mutant, walked)
            except ErrorResponse:
                pass
        assert repr(walked) == before, "a walk changed the chain it went on from, which others share"


@pytest.mark.parametrize(
    "text", ['{"city":"Paris"}', '{"a":{"b":[1]}}', '{"a":NaN}', '{"a":1,"a":2.5}', "[1]", "nope", '"x"', "{}"]
)
def test_call_arguments_are_what_decoding_gives_and_a_fresh_object_each_time(text: str) -> None:
    """What a replayed call's `arguments` string reads as: a caller may change what it was given."""
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
