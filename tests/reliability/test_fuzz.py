"""Fuzz the engine through `Engine.handle`, the one function every door calls, for every wire format.

Whatever arrives (random JSON, real requests with one field broken, wrong types, cut-off or oversized
bodies, odd paths and methods, odd headers at the HTTP door), the answer must be the provider's own
error shape with a 4xx status, or a 200 the client side can read. A 5xx means the engine's last-resort
handler caught a crash in a wire module, so it fails here with the exception it caught.

Set SANDBOX_FUZZ_EXAMPLES=5000 for a longer local run; CI keeps the default, a few seconds in all.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import os
from collections.abc import MutableMapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sandbox
from sandbox import Rule, skyl
from sandbox.wire import get_wire_format
from sandbox.wire._sse import SSEParser
from tests.conftest import lesson_loop, scenario_request, scripted_run

PROVIDERS = sandbox.PROVIDERS
EXAMPLES = int(os.environ.get("SANDBOX_FUZZ_EXAMPLES", "120"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_ENGINE = sandbox.Engine(budget=10**6)
"""One engine for every example, as a long-lived server has; the large budget keeps the repeat guard
from turning hypothesis's replays of one body into budget errors (those are tested in test_engine)."""


def _path(provider: str, *, model: str = "single_call", stream: bool = False) -> str:
    if provider == "gemini":
        return f"/v1beta/models/{model}:{'streamGenerateContent' if stream else 'generateContent'}"
    return {"openai": "/v1/chat/completions", "openai-responses": "/v1/responses", "anthropic": "/v1/messages"}[
        provider
    ]


@functools.cache
def _corpus(provider: str) -> tuple[tuple[str, bytes], ...]:
    """Every request a correct lesson loop sends (path, body), for a few scenarios, streamed and not:
    the valid bodies that mutations start from."""
    found: list[tuple[str, bytes]] = []
    for name in ("single_call", "parallel_calls", "multi_step", "tool_error_recovery", "plain_text"):
        for stream in (False, True):
            transport = sandbox.transport()
            client = skyl.Client(provider, transport=transport)
            lesson_loop(client, scenario_request(name), scripted_run(name), stream=stream)
            found.extend((exchange.path, exchange.request_body) for exchange in transport.journal)
    return tuple(found)


# -- checks ----------------------------------------------------------------------------------------


def _check_error_shape(provider: str, status: int, body: bytes) -> str:
    """The provider's documented error envelope; returns its message."""
    data = json.loads(body)
    assert isinstance(data, dict), data
    if provider in ("openai", "openai-responses"):
        error = data["error"]
        assert set(error) == {"message", "type", "param", "code"}, error
        assert isinstance(error["type"], str)
        assert error["param"] is None or isinstance(error["param"], str)
        assert error["code"] is None or isinstance(error["code"], str)
    elif provider == "anthropic":
        assert data["type"] == "error", data
        error = data["error"]
        assert isinstance(error["type"], str)
    else:
        error = data["error"]
        assert error["code"] == status, error
        assert isinstance(error["status"], str) and error["status"].isupper(), error
    assert isinstance(error["message"], str) and error["message"], error
    return str(error["message"])


def _check(exchange: sandbox.Exchange, *, provider: str | None = None) -> None:
    """Never a 5xx; a 4xx in the provider's shape that its own client decodes; a 200 the client reads."""
    assert isinstance(exchange, sandbox.Exchange)
    if provider is not None:
        assert exchange.provider == provider
    assert exchange.provider in PROVIDERS
    wire = get_wire_format(exchange.provider)
    if exchange.status >= 500:
        message = exchange.error.message if exchange.error else exchange.body[:500].decode(errors="replace")
        pytest.fail(f"{exchange.provider} {exchange.method} {exchange.path}: {exchange.status}: {message}")
    assert all(isinstance(chunk, bytes) for chunk in exchange.chunks)
    if exchange.status >= 400:
        assert exchange.error is not None and isinstance(exchange.error.rule, Rule)
        assert exchange.headers["content-type"].startswith("application/json")
        message = _check_error_shape(exchange.provider, exchange.status, exchange.body)
        assert message == exchange.error.message
        decoded = wire.decode_error(exchange.status, exchange.body)
        assert decoded.message == message, "the client must show the provider's message verbatim"
        return
    assert exchange.status == 200
    if exchange.is_stream:
        decoder = wire.stream_decoder()
        parser = SSEParser()
        for chunk in exchange.chunks:
            for event in parser.feed(chunk):
                decoder.feed(event)
        events, leftover = parser.close()
        for event in events:
            decoder.feed(event)
        assert not leftover.strip()
        decoder.finish()
    else:
        wire.decode_response(json.loads(exchange.body))


# -- strategies ------------------------------------------------------------------------------------

_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)

_RAW = "\x00__raw__\x00"
"""A string that marks where a raw JSON token goes after dumping, for tokens json.dumps cannot write."""
_RAW_TOKENS = [
    "1" * 5000,  # past Python's int-string limit (ValueError, not JSONDecodeError)
    "1e999",  # float overflow: inf
    "-0",
    "NaN",
    "-Infinity",
    '"\\ud800"',  # a lone surrogate: valid JSON, not encodable as UTF-8
    '"\\udfff\\ud800"',
    '"\\u0000"',
    '"' + "x" * 100_000 + '"',
    "[" * 5000 + "]" * 5000,  # deep nesting: RecursionError, not ValueError
    '{"a":' * 2000 + "1" + "}" * 2000,
    "1.5",
    "true",
    "[]",
    "{}",
    '""',
    '" "',
]
_WRONG_TYPES: list[Any] = [None, 0, -1, 1.5, True, False, "", " ", "null", [], {}, [None], {"": None}, 2**63, -(2**63)]
_FIELD_NAMES = [
    "model", "messages", "role", "content", "tool_calls", "tool_call_id", "id", "type", "function", "name",
    "arguments", "input", "output", "call_id", "tools", "tool_choice", "stream", "system", "max_tokens",
    "tool_use_id", "tool_use", "tool_result", "is_error", "text", "contents", "parts", "functionCall",
    "functionResponse", "response", "systemInstruction", "generationConfig", "parameters", "instructions",
]  # fmt: skip
_replacements = st.one_of(
    json_values,
    st.sampled_from(_WRONG_TYPES).map(copy.deepcopy),  # later mutations edit values in place
    st.sampled_from(_RAW_TOKENS).map(lambda token: (_RAW, token)),
    st.sampled_from(_FIELD_NAMES),
)


def _locations(value: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """Every (container, key) in a JSON tree, the root included as (None, None)."""
    if not out:
        out.append((None, None))
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        out.append((value, key))
        _locations(child, out)
    return out


@st.composite
def mutated_bodies(draw: st.DrawFn, provider: str) -> tuple[str, bytes]:
    """A real request with one to three fields broken: replaced, removed, duplicated, reordered, added."""
    path, body = draw(st.sampled_from(_corpus(provider)))
    tree: Any = json.loads(body)
    raws: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        locations = _locations(tree, [])
        container, key = draw(st.sampled_from(locations))
        op = draw(st.sampled_from(["replace", "replace", "delete", "duplicate", "reverse", "add_key", "string"]))
        if container is None:
            new = draw(_replacements)
            if isinstance(new, tuple):
                raws.append(new[1])
                new = _RAW
            tree = new
            continue
        target = container[key]
        if op == "delete":
            if isinstance(container, dict):
                del container[key]
            else:
                container.pop(key)
        elif op == "duplicate" and isinstance(container, list):
            container.insert(key, json.loads(json.dumps(target)))
        elif op == "reverse" and isinstance(target, list):
            target.reverse()
        elif op == "add_key" and isinstance(target, dict):
            target[draw(st.sampled_from(_FIELD_NAMES) | st.text(max_size=8))] = draw(json_values)
        elif op == "string":
            container[key] = draw(st.sampled_from(["", " ", "\u202e", "\U0001f600" * 3, "a" * 70, "null"]))
        else:
            new = draw(_replacements)
            if isinstance(new, tuple):
                raws.append(new[1])
                new = _RAW
            container[key] = new
    text = json.dumps(tree, ensure_ascii=False)
    for token in raws:
        text = text.replace(json.dumps(_RAW, ensure_ascii=False), token, 1)
    return path, text.encode("utf-8", "surrogatepass")


def _random_body() -> st.SearchStrategy[bytes]:
    return st.one_of(
        json_values.map(lambda value: json.dumps(value).encode()),
        st.binary(max_size=200),
        st.text(max_size=200).map(lambda text: text.encode()),
        st.sampled_from(_RAW_TOKENS).map(str.encode),
        st.sampled_from([b"\xef\xbb\xbf{}", '{"model":"x"}'.encode("utf-16"), b"{}" * 3, b" \n{}\n "]),
    )


# -- the engine ------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@FUZZ
@given(body=_random_body(), stream=st.booleans())
def test_engine_answers_random_bodies_in_the_providers_error_shape(provider: str, body: bytes, stream: bool) -> None:
    _check(_ENGINE.handle("POST", _path(provider, stream=stream), body), provider=provider)


@pytest.mark.parametrize("provider", PROVIDERS)
@FUZZ
@given(data=st.data())
def test_engine_answers_mutated_real_requests_without_crashing(provider: str, data: st.DataObject) -> None:
    path, body = data.draw(mutated_bodies(provider))
    _check(_ENGINE.handle("POST", path, body), provider=provider)


@pytest.mark.parametrize("provider", PROVIDERS)
@FUZZ
@given(data=st.data())
def test_engine_answers_truncated_requests_in_the_providers_error_shape(provider: str, data: st.DataObject) -> None:
    path, body = data.draw(st.sampled_from(_corpus(provider)))
    cut = data.draw(st.integers(0, len(body) - 1))
    exchange = _ENGINE.handle("POST", path, body[:cut])
    _check(exchange, provider=provider)
    assert exchange.status == 400


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_corpus_request_is_answered_with_200(provider: str) -> None:
    """The starting points of the mutations are valid, so the fuzz explores near real requests."""
    for path, body in _corpus(provider):
        exchange = _ENGINE.handle("POST", path, body)
        _check(exchange, provider=provider)
        assert exchange.status == 200, exchange.body


@pytest.mark.parametrize("provider", PROVIDERS)
@FUZZ
@given(data=st.data())
def test_engine_refuses_oversized_bodies_with_413(provider: str, data: st.DataObject) -> None:
    path, body = data.draw(st.sampled_from(_corpus(provider)))
    limit = data.draw(st.integers(0, len(body) - 1))
    exchange = sandbox.Engine(max_body_bytes=limit).handle("POST", path, body)
    _check(exchange, provider=provider)
    assert exchange.status == 413


_METHODS = ["GET", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "post", "Post", "TRACE", "", "P O S T", "\u00e9"]
_PATH_PIECES = [
    "/v1/chat/completions", "/chat/completions", "/v1/responses", "/responses", "/v1/messages",
    "/v1beta/models/single_call:generateContent", "/v1/models/x:streamGenerateContent",
    "/v1alpha/models/:generateContent", "/v1beta/models/a/b:generateContent", "/v1beta/models/x:countTokens",
    "/", "", "//", "/..", "/v1/messages/../messages", "/%2e%2e/", "/v1/messages/batches", "?", "#", ":",
]  # fmt: skip
_paths = st.one_of(
    st.lists(st.sampled_from(_PATH_PIECES) | st.text(max_size=12), min_size=1, max_size=3).map("".join),
    st.text(max_size=40).map(lambda model: f"/v1beta/models/{model}:generateContent"),
    st.text(max_size=20).map(lambda suffix: "/v1/chat/completions" + suffix),
)


@FUZZ
@given(method=st.sampled_from(_METHODS) | st.text(max_size=8), path=_paths, data=st.data())
def test_engine_answers_odd_paths_and_methods_with_a_provider_shaped_4xx(
    method: str, path: str, data: st.DataObject
) -> None:
    provider = data.draw(st.sampled_from(PROVIDERS))
    body = data.draw(st.sampled_from(_corpus(provider)).map(lambda item: item[1]) | _random_body())
    exchange = _ENGINE.handle(method, path, body)
    _check(exchange)
    if method.upper() != "POST":
        assert exchange.status == 404


# -- the HTTP door ---------------------------------------------------------------------------------

_header_names = st.sampled_from(
    [b"content-type", b"content-length", b"transfer-encoding", b"content-encoding", b"authorization",
     b"x-api-key", b"anthropic-version", b"x-goog-api-key", b"host", b"accept", b"x-\xff"]
)  # fmt: skip
_headers = st.lists(st.tuples(_header_names, st.binary(max_size=20)), max_size=6)


async def _drive_asgi(app: sandbox.SandboxApp, scope: dict[str, Any], messages: list[dict[str, Any]]) -> list[Any]:
    queue = list(messages)
    sent: list[dict[str, Any]] = []

    async def receive() -> MutableMapping[str, Any]:
        return queue.pop(0) if queue else {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    await app(scope, receive, send)
    return sent


@pytest.mark.parametrize("provider", PROVIDERS)
@FUZZ
@given(headers=_headers, data=st.data())
def test_http_door_answers_like_the_engine_whatever_the_headers_and_chunking(
    provider: str, headers: list[tuple[bytes, bytes]], data: st.DataObject
) -> None:
    path, body = data.draw(st.sampled_from(_corpus(provider)) | mutated_bodies(provider))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=4)))
    pieces = [body[start:end] for start, end in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    messages = [
        {"type": "http.request", "body": piece, "more_body": index < len(pieces) - 1}
        for index, piece in enumerate(pieces)
    ]
    limit = data.draw(st.sampled_from([_ENGINE.max_body_bytes, max(1, len(body) // 2)]))
    engine = sandbox.Engine(budget=10**6, max_body_bytes=limit)
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "query_string": b"alt=sse",  # what the SDKs send for a Gemini stream; ignored by the others
        "headers": headers,
        "client": ("127.0.0.1", 1),
    }
    sent = asyncio.run(_drive_asgi(sandbox.SandboxApp(engine), scope, messages))

    assert sent[0]["type"] == "http.response.start"
    assert all(message["type"] == "http.response.body" for message in sent[1:])
    assert [message.get("more_body", False) for message in sent[1:]] == [True] * (len(sent) - 2) + [False]
    got = b"".join(message["body"] for message in sent[1:])
    codings = b",".join(value for name, value in headers if name == b"content-encoding").decode("latin-1")
    if [name for name in (part.strip().lower() for part in codings.split(",")) if name not in ("", "identity")]:
        # An encoding the body is not in: refused in the provider's envelope, never parsed as JSON.
        assert sent[0]["status"] in (400, 413, 415)
        _check_error_shape(provider, sent[0]["status"], got)
        return
    twin = sandbox.Engine(budget=10**6, max_body_bytes=limit)  # a fresh engine: ids are issued per engine
    expected = twin.handle("POST", path, body) if len(body) <= limit else twin.refuse_oversized("POST", path, 0)
    _check(expected, provider=provider)
    assert sent[0]["status"] == expected.status
    if expected.status != 413:  # the 413 names how much was read, which depends on the chunking
        assert got == expected.body


def _asgi_answer(engine: sandbox.SandboxApp, path: str, body: bytes, headers: list[tuple[bytes, bytes]]) -> bytes:
    scope = {"type": "http", "method": "POST", "path": path, "query_string": b"", "headers": headers,
             "client": ("127.0.0.1", 1)}  # fmt: skip
    sent = asyncio.run(_drive_asgi(engine, scope, [{"type": "http.request", "body": body, "more_body": False}]))
    return b"".join(message["body"] for message in sent[1:])


def test_a_content_length_of_a_digit_that_is_no_number_is_answered_not_crashed() -> None:
    """'²' (latin-1 0xb2) is a digit to `str.isdigit` and no number to `int`: the door crashed reading it
    (found by the fuzzer above)."""
    path, body = _corpus("gemini")[0]
    got = _asgi_answer(sandbox.SandboxApp(sandbox.Engine()), path, body, [(b"content-length", b"\xb2")])
    assert got == sandbox.Engine().handle("POST", path, body).body


def _deep_stack(depth: int, call: Any) -> Any:
    return call() if depth == 0 else _deep_stack(depth - 1, call)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("levels", [500, 700, 990])
def test_deep_nesting_is_answered_alike_on_any_stack_and_in_any_thread(provider: str, levels: int) -> None:
    """Python's decoder gives up where the stack runs out, so a deeply nested body was refused when the
    caller was deep (a test, a framework) and parsed in the server's worker thread (bodies over 64 KiB):
    the same request, two answers (found by the fuzzer above on a 4 MiB body). The limit is now the
    sandbox's own, the same everywhere."""
    path, body = _corpus(provider)[0]
    data = json.loads(body)
    data["metadata" if provider != "gemini" else "labels"] = {"padding": "x" * 70_000}
    nested = json.dumps(data).encode()[:-1] + b', "deep": ' + b"[" * levels + b"]" * levels + b"}"
    shallow = sandbox.Engine().handle("POST", path, nested)
    deep = _deep_stack(300, lambda: sandbox.Engine().handle("POST", path, nested))
    through_the_door = _asgi_answer(sandbox.SandboxApp(sandbox.Engine()), path, nested, [])
    assert shallow.body == deep.body == through_the_door
    if levels > 512:
        assert shallow.status == 400


@FUZZ
@given(scope_type=st.sampled_from(["websocket", "lifespan_unknown", "http"]), method=st.sampled_from(_METHODS))
def test_http_door_ignores_other_scopes_and_answers_any_method(scope_type: str, method: str) -> None:
    scope: dict[str, Any] = {"type": scope_type, "method": method, "path": "/v1/messages", "headers": []}
    sent = asyncio.run(_drive_asgi(sandbox.SandboxApp(_ENGINE), scope, [{"type": "http.request", "body": b"{}"}]))
    if scope_type != "http":
        assert sent == []
        return
    body = b"".join(message["body"] for message in sent[1:])
    if method == "OPTIONS":  # not a preflight (no Origin): the methods this path allows
        assert sent[0]["status"] == 204 and (b"allow", b"GET, HEAD, POST, OPTIONS") in sent[0]["headers"]
        return
    if method == "HEAD":  # GET's answer without its body
        assert sent[0]["status"] == 404 and body == b""
        return
    assert sent[0]["status"] in (400, 404)
    _check_error_shape("anthropic", sent[0]["status"], body)
