"""The one-walk readers of Anthropic and Gemini requests (`wire/anthropic/_fast`, `wire/gemini/_fast`)
against the full readers they stand in for: on every body either the walk declines, or it returns
exactly what the full path returns (the same objects, field by field and type by type, sharing the
same parts of the decoded body), and it never accepts a body the full path refuses. And the walk is
taken for the bodies the SDKs, the skyl client and the serve bench send, so it cannot rot into
always declining while every test still passes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sandbox
from sandbox import skyl
from sandbox.engine._catalogue import catalogue
from sandbox.engine._engine import Engine, Exchange
from sandbox.wire import Conversation, WireError
from sandbox.wire.anthropic import _fast as anthropic_fast
from sandbox.wire.anthropic import _parse as anthropic_parse
from sandbox.wire.gemini import _fast as gemini_fast
from sandbox.wire.gemini import _jsontext as gemini_jsontext
from sandbox.wire.gemini import _parse as gemini_parse
from tests import sdk_drivers
from tests.corpus import mutants, nodes, play_loop

PROVIDERS = ("anthropic", "gemini")
MODEL = "single_call"


def fast(provider: str, body: bytes) -> Conversation | None:
    if provider == "anthropic":
        return anthropic_fast.fast_request(body)
    return gemini_fast.fast_request(body, path_model=MODEL, path_stream=False)


def full(provider: str, body: bytes) -> Conversation | BaseException:
    """The full path's conversation, or whatever it raised (a `WireError` for every bad body)."""
    try:
        if provider == "anthropic":
            return anthropic_parse.parse_body(body)[0]
        return gemini_parse.parse_request(body, path_model=MODEL, path_stream=False)
    except Exception as raised:  # the comparison says which: the walk must have declined
        return raised


def _containers(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[int, tuple[Any, ...]]]:
    if isinstance(value, (dict, list)):
        yield id(value), path
        for key, inner in value.items() if isinstance(value, dict) else enumerate(value):
            yield from _containers(inner, (*path, key))


def assert_same(got: Any, want: Any) -> None:
    """`got` and `want` equal field by field with the same types (True is not 1, a tuple not a list),
    dicts in the same key order, and each dict or list the same node of its own request's `raw` (or
    of neither): a tool call's arguments are the body's own object on both paths, or a copy on both."""
    got_nodes, want_nodes = dict(_containers(got.raw)), dict(_containers(want.raw))

    def same(a: Any, b: Any, where: str) -> None:
        assert type(a) is type(b), f"{where}: {type(a).__name__} != {type(b).__name__}"
        if isinstance(a, (dict, list)):
            assert got_nodes.get(id(a)) == want_nodes.get(id(b)), f"{where}: not the same node of the body"
        if isinstance(a, dict):
            assert list(a) == list(b), f"{where}: keys {list(a)} != {list(b)}"
            for key in a:
                same(a[key], b[key], f"{where}.{key}")
        elif isinstance(a, (list, tuple)):
            assert len(a) == len(b), f"{where}: {len(a)} items != {len(b)}"
            for index, (x, y) in enumerate(zip(a, b, strict=True)):
                same(x, y, f"{where}[{index}]")
        elif hasattr(a, "__dict__"):
            same(vars(a), vars(b), f"{where}<{type(a).__name__}>")
        else:
            assert a == b, f"{where}: {a!r} != {b!r}"

    same(got, want, "conversation")


def taken(provider: str, body: bytes) -> bool:
    """Check one body both ways; True when the walk read it itself."""
    walked = fast(provider, body)
    reference = full(provider, body)
    if walked is None:
        return False
    assert not isinstance(reference, BaseException), f"the walk accepted a body the full path refuses: {reference!r}"
    assert_same(walked, reference)
    assert walked.raw == json.loads(body), "the walk changed the decoded body"
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


def _provider_of(path: str) -> str | None:
    return "anthropic" if path == "/v1/messages" else "gemini" if "generateContent" in path else None


def _skyl_loop(engine: Engine, provider: str, name: str, *, stream: bool, reasoning: bool) -> None:
    scenario = engine.scenarios[name]
    client = skyl.Client(provider, api_key="k", transport=sandbox.transport(engine=engine))
    req = skyl.Request(
        model=name, messages=[skyl.user_text(scenario.prompt)], tools=list(scenario.tools), reasoning=reasoning
    )
    play_loop(
        client,
        req,
        stream=stream,
        result=lambda call: f"{call.name}: {json.dumps(dict(call.arguments), sort_keys=True)} ok",
    )


@pytest.fixture(scope="module")
def skyl_bodies() -> dict[str, list[tuple[str, bytes]]]:
    """Every distinct body the skyl client sends over the catalogue (plain and streamed, reasoning
    asked or not) that the engine answered with 200: among them the serve bench's pool, the second
    request of `single_call`."""
    sent: list[tuple[str, bytes]] = []
    for name in sorted(catalogue()):
        for provider in PROVIDERS:
            for stream in (False, True):
                for reasoning in (False, True):
                    _skyl_loop(_recorded(Engine(), sent), provider, name, stream=stream, reasoning=reasoning)
    return _by_provider(sent)


def _by_provider(sent: list[tuple[str, bytes]]) -> dict[str, list[tuple[str, bytes]]]:
    """Each distinct (path, body), by provider."""
    bodies: dict[str, list[tuple[str, bytes]]] = {provider: [] for provider in PROVIDERS}
    for path, body in dict.fromkeys(sent):
        provider = _provider_of(path)
        if provider is not None:
            bodies[provider].append((path, body))
    return bodies


PLAIN = ("single_call", "parallel_calls", "multi_step")
REASONING = ("multi_step_reasoning",)
SDK_LOOPS: list[tuple[Callable[..., Any], dict[str, Any], tuple[str, ...]]] = [
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
def sdk_bodies() -> dict[str, list[tuple[str, bytes]]]:
    """What the official SDKs (anthropic, google-genai) send in their users' own tool loops, thinking
    and thought signatures included."""
    sent: list[tuple[str, bytes]] = []
    for driver, options, scenarios in SDK_LOOPS:
        for scenario in scenarios:
            transport = sandbox.httpx2_transport(engine=_recorded(Engine(), sent))
            driver(scenario, **options, **sdk_drivers.in_process_options(driver.__name__, transport))
    return _by_provider(sent)


@pytest.mark.slow
@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_walk_reads_every_body_the_skyl_client_sends(
    provider: str, skyl_bodies: dict[str, list[tuple[str, bytes]]]
) -> None:
    bodies = [body for _, body in skyl_bodies[provider]]
    assert len(bodies) > 50, "the catalogue sent fewer bodies than it should"
    declined = [body for body in bodies if not taken(provider, body)]
    assert not declined, f"{len(declined)} of {len(bodies)} declined, first: {declined[0][:400]!r}"


@pytest.mark.slow
@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_walk_reads_every_body_the_official_sdk_sends(
    provider: str, sdk_bodies: dict[str, list[tuple[str, bytes]]]
) -> None:
    bodies = [body for _, body in sdk_bodies[provider]]
    assert len(bodies) >= 10
    declined = [body for body in bodies if not taken(provider, body)]
    assert not declined, f"{len(declined)} of {len(bodies)} declined, first: {declined[0][:400]!r}"


# -- bodies it must not misread ---------------------------------------------------------------------

WRONG: tuple[Any, ...] = (None, True, 0, 1.5, "x", "", [], {}, "true", -1)


def _mutants(body: bytes) -> Iterator[bytes]:
    """Each node of `body` replaced by each wrong value, dropped, or (a list's item) sent twice."""
    return (json.dumps(mutant).encode() for mutant in mutants(json.loads(body), WRONG))


@pytest.mark.slow
@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_walk_declines_or_agrees_on_every_mutation_of_a_valid_body(
    provider: str, skyl_bodies: dict[str, list[tuple[str, bytes]]]
) -> None:
    """About 40,000 bodies: each node of each short valid body replaced by a wrong value, dropped, or
    repeated. Those the full path accepts are mostly read by the walk; none it refuses is."""
    counts = {True: 0, False: 0}
    short = [body for _, body in skyl_bodies[provider] if len(list(nodes(json.loads(body)))) <= 40]
    for body in short[:60]:
        for mutant in _mutants(body):
            counts[taken(provider, mutant)] += 1
    assert counts[True] > 1000 and counts[False] > 1000, counts


UNUSUAL = {
    "anthropic": [
        {"thread": {"type": "create"}},
        {"stream": "true"},
        {"max_tokens": 1024.0},
        {"system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}], "top_k": True},
        {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]},
        {"messages": [{"role": "user", "content": [{"type": "image", "source": {}}, {"type": "text", "text": "hi"}]}]},
        {"tools": [{"type": "web_search_20250305", "name": "web_search"}]},
        {"response_format": {"type": "json"}},
    ],
    "gemini": [
        {"contents": [{"role": "user", "parts": [{"text": "hi", "videoMetadata": {}}]}]},
        {"contents": [{"role": "model", "parts": [{"text": "hi"}]}]},
        {"contents": [{"role": "user", "parts": [{"text": "hi", "thought": "true"}]}]},
        {"contents": [{"role": "user", "parts": [{"inlineData": {"mimeType": "image/png", "data": "AAAA"}}]}]},
        {"contents": {"role": "user", "parts": [{"text": "hi"}]}},
        {"generationConfig": {"temperature": "0.5"}},
        {"toolConfig": {"functionCallingConfig": {"mode": "any", "allowedFunctionNames": "get_weather"}}},
    ],
}
BASE = {
    "anthropic": {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]},
    "gemini": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
}


@pytest.mark.parametrize(
    ("provider", "change"),
    [(provider, change) for provider, changes in UNUSUAL.items() for change in changes],
    ids=lambda value: json.dumps(value)[:60] if isinstance(value, dict) else value,
)
def test_an_unusual_shape_goes_to_the_full_path(provider: str, change: dict[str, Any]) -> None:
    """Shapes the walk does not verify itself (some valid, some not) are left to the full path."""
    body = json.dumps({**BASE[provider], **change}).encode()
    assert fast(provider, json.dumps(BASE[provider]).encode()) is not None
    assert fast(provider, body) is None


CURL = {  # the first request of each provider's own quickstart, as a learner types it
    "anthropic": {"model": MODEL, "max_tokens": 1024, "messages": [{"role": "user", "content": "Hello, world"}]},
    "gemini": {"contents": [{"parts": [{"text": "Explain how AI works in a few words"}]}]},
}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_walk_reads_the_quickstart_body(provider: str) -> None:
    assert taken(provider, json.dumps(CURL[provider]).encode())


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
@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_walk_declines_or_agrees_on_random_changes(
    provider: str, skyl_bodies: dict[str, list[tuple[str, bytes]]], data: st.DataObject
) -> None:
    """Hypothesis: up to three nodes of any valid body replaced by arbitrary JSON or dropped, or a key
    added to an object (an unknown one, or another spelling of a known one)."""
    _, body = data.draw(st.sampled_from(skyl_bodies[provider]))
    changed = json.loads(body)
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
    taken(provider, json.dumps(changed).encode())


# -- the engine's answers ---------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_engine_answers_the_same_with_and_without_the_walk(
    provider: str, skyl_bodies: dict[str, list[tuple[str, bytes]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same bodies sent in the same order to two fresh engines, one of them without the walk:
    every answer byte for byte the same, headers, ids, kept state and repeat guard included."""
    sent = skyl_bodies[provider][:80]

    def answers() -> list[tuple[int, list[tuple[str, str]], list[bytes]]]:
        engine = Engine()
        answered = []
        for index, (path, body) in enumerate(sent):
            exchange = engine.handle("POST", path, body, client=str(index % 3))
            answered.append((exchange.status, list(exchange.headers.items()), list(exchange.chunks)))
        return answered

    with_walk = answers()
    module = anthropic_fast if provider == "anthropic" else gemini_fast
    monkeypatch.setattr(module, "fast_request", lambda *args, **kwargs: None)
    assert answers() == with_walk


def test_the_full_path_words_the_error_of_a_body_the_walk_declines() -> None:
    """A declined body's error is the full path's own: the walk never words one."""
    body = json.dumps({**BASE["anthropic"], "stream": "maybe"}).encode()
    assert fast("anthropic", body) is None
    with pytest.raises(WireError, match="stream: Input should be a valid boolean"):
        anthropic_parse.parse_request(body)


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for level in range(depth - 1):
        value = [value] if level % 2 else {"k": value, "s": "x"}
    return value


@settings(max_examples=200)
@given(depth=st.integers(90, 110), leaf=_JSON, wide=st.integers(0, 3))
def test_the_gemini_depth_check_agrees_with_the_walk_of_every_node(depth: int, leaf: Any, wide: int) -> None:
    """A Gemini body past 100 `{` and `[` without a surrogate escape has only its containers' depth
    measured (`_jsontext._too_deep`): the same verdict as the walk of every node that also looks at
    each string, at the depths around protobuf's limit of 100."""
    data = {"contents": [_nested(depth, leaf) for _ in range(wide + 1)]}
    text = json.dumps(data)
    assert gemini_jsontext.tree_problem(text, data) == gemini_jsontext._tree_problem(data)
