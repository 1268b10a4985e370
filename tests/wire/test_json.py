"""A request's JSON read by orjson first (`sandbox.wire._json.decode`) gives exactly what `json` gives:
the same values, of the same types, and for a body orjson refuses, `json`'s own error, which the wire
formats turn into each provider's error text. Compared with the orjson reading switched off."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox.wire import _json
from sandbox.wire.gemini._jsontext import _DECODER as GEMINI_DECODER
from sandbox.wire.openai_chat._validate import _DECODER as CHAT_DECODER

pytestmark = pytest.mark.skipif(
    _json._orjson_loads is None, reason="orjson is a dependency: installed with the package"
)


def _shape(value: Any) -> Any:
    """`value` with every type made visible: 1 and 1.0, 0.0 and -0.0, True and 1 all differ."""
    if isinstance(value, dict):
        return ("dict", [(key, _shape(item)) for key, item in value.items()])
    if isinstance(value, list):
        return ("list", [_shape(item) for item in value])
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


def _outcome(data: bytes | str, decoder: json.JSONDecoder, *, fast: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as patch:
        if not fast:
            patch.setattr(_json, "_orjson_loads", None)
        try:
            return ("value", _shape(_json.decode(data, decoder)))
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError, a hook's own
            return ("error", type(exc).__name__, str(exc))


def _same(data: bytes | str, decoder: json.JSONDecoder, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _outcome(data, decoder, fast=True, monkeypatch=monkeypatch)
    assert fast == _outcome(data, decoder, fast=False, monkeypatch=monkeypatch), data


EDGES = [
    b'{"a":1,"a":2,"b":3}',  # a repeated key: the last value, in the first key's place
    b"99999999999999999999",  # past 64 bits: orjson would give a float
    b"18446744073709551616",
    b"-9223372036854775809",
    b"[1111111111111111111]",
    b"1e400",  # past a double: json gives inf, orjson refuses
    b"-1.7976931348623157e309",
    b"1e-400",
    b"NaN",
    b"[Infinity]",
    b'"\\ud800"',  # an escaped lone surrogate
    b'"\\ude00\\ud83d"',
    b'"\\ud83d\\ude00"',
    b'"\xed\xa0\x80"',  # a surrogate encoded in UTF-8: json's surrogatepass reads it
    b"\xef\xbb\xbf{}",  # a UTF-8 BOM
    '{"a":1}'.encode("utf-16"),
    '{"a":1}'.encode("utf-32-le"),
    b'"\xff"',
    b'"\xc0\xaf"',
    b"-0",
    b"-0.0",
    b"0e0",
    b"[1,]",
    b'{"a":1}\x00',
    b'"\t"',
    b"",
    b"  ",
    b"[" * 512 + b"]" * 512,  # at the limit
    b"[" * 513 + b"]" * 513,  # past it: refused before either reads it, orjson would accept
    b"[" * 1100 + b"]" * 1100,
    b'{"model":"m","temperature":0.7,"max_tokens":1024,"stream":true}',
    "\ufeff{}".encode(),  # as text: json refuses a BOM there
]


@pytest.mark.parametrize("data", EDGES, ids=range(len(EDGES)))
@pytest.mark.parametrize("decoder", [CHAT_DECODER, GEMINI_DECODER, _json._PLAIN], ids=["chat", "gemini", "plain"])
def test_edges_read_as_json_reads_them(data: bytes, decoder: json.JSONDecoder, monkeypatch: pytest.MonkeyPatch) -> None:
    _same(data, decoder, monkeypatch)
    try:
        text = data.decode("utf-8", "surrogatepass")  # as text too (a call's arguments are text)
    except UnicodeDecodeError:
        return
    _same(text, decoder, monkeypatch)


def test_a_long_integer_keeps_its_digits() -> None:
    assert _json.loads(b'{"n":123456789012345678901234567890}') == {"n": 123456789012345678901234567890}
    assert _json.loads(b'{"n":-9223372036854775809}')["n"] == -9223372036854775809


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**25), max_value=10**25)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(st.characters(codec=None, exclude_categories=()), max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)
NOISE = st.sampled_from(
    [
        b"",
        b"\x00",
        b"\xff",
        b"\xed\xa0\x80",
        b"\\",
        b'"',
        b",",
        b"]",
        b"}",
        b"{",
        b"[",
        b" ",
        b"1" * 20,
        b"e9",
        b"\\ud800",
    ]
)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(value=JSON, ascii=st.booleans(), cut=st.integers(min_value=0, max_value=400), noise=NOISE)
def test_any_body_reads_as_json_reads_it(value: Any, ascii: bool, cut: int, noise: bytes) -> None:
    monkeypatch = pytest.MonkeyPatch()
    try:
        text = json.dumps(value, ensure_ascii=ascii)
        data = text.encode("utf-8", "surrogatepass")
        for body in (data, data[:cut] + noise + data[cut:], data[:cut] + data[cut + 1 :]):
            for decoder in (CHAT_DECODER, GEMINI_DECODER):
                _same(body, decoder, monkeypatch)
        _same(text, CHAT_DECODER, monkeypatch)
    finally:
        monkeypatch.undo()


def test_every_decoder_of_the_sandbox_is_one_orjson_may_stand_in_for() -> None:
    """orjson applies no hooks: a decoder with an object hook or its own float reading would be
    skipped by it. Each of the sandbox's decoders sets at most `parse_constant` and a `parse_int`
    that agrees with `int` on every integer orjson reads (fewer than 19 digits)."""
    import importlib
    import pkgutil

    import sandbox

    decoders = []
    for module in pkgutil.walk_packages(sandbox.__path__, "sandbox."):
        if module.name.startswith("sandbox.golang") or module.name.endswith("__main__"):
            continue
        for value in vars(importlib.import_module(module.name)).values():
            if isinstance(value, json.JSONDecoder) and all(value is not known for known in decoders):
                decoders.append(value)
    assert len(decoders) >= 5
    for decoder in decoders:
        assert decoder.object_hook is None and decoder.object_pairs_hook is None
        assert decoder.parse_float is float and decoder.strict
        for digits in ("0", "-1", "9223372036854775807", "-9223372036854775808", "123456789012345678"):
            assert decoder.parse_int(digits) == int(digits)


def _orjson_read_agrees(body: bytes) -> None:
    read = _json.orjson_read(body)
    if read is None:
        return  # left to json
    (value,) = read
    assert repr(value) == repr(json.loads(body)), body  # repr: 1, 1.0 and True differ; no deep recursion


@pytest.mark.parametrize("data", EDGES, ids=range(len(EDGES)))
def test_orjson_read_gives_json_s_value_or_nothing(data: bytes) -> None:
    """What `decode` reads bodies with first: never a value json would not give, never a verdict."""
    _orjson_read_agrees(data)


@pytest.mark.parametrize(
    "body",
    [
        b'"\\ud800"',
        b'"\\udc00"',
        b'"\\ud800\\u0041"',
        b"\xef\xbb\xbf{}",
        b'{"a":NaN}',
        b"[1111111111111111111]",
        b"[" * 513 + b"]" * 513,
        b'{"a":"\xff"}',
        "{}".encode("utf-16"),
    ],
    ids=repr,
)
def test_orjson_read_leaves_to_json_what_only_json_may_read(body: bytes) -> None:
    """Lone surrogates, a BOM, NaN, a long digit run, past the nesting limit, not UTF-8: `json` reads
    these (or words their error), so orjson_read gives nothing for them."""
    assert _json.orjson_read(body) is None


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(value=JSON, cut=st.integers(min_value=0, max_value=400), noise=NOISE)
def test_orjson_read_of_any_body_is_json_s(value: Any, cut: int, noise: bytes) -> None:
    data = json.dumps(value).encode("utf-8", "surrogatepass")
    for body in (data, data[:cut] + noise + data[cut:]):
        _orjson_read_agrees(body)
