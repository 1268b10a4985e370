"""Compact JSON written by orjson where its text is `json`'s (`sandbox/wire/_compact.py`): kept state
stores exactly `json`'s bytes whichever encoder wrote them, and an echo key tells values apart
exactly where `json`'s text does."""

from __future__ import annotations

import json
import math
import random
import struct
from typing import Any

import pytest

from sandbox.wire import _compact
from sandbox.wire._compact import compact_bytes, compact_key

pytestmark = pytest.mark.skipif(
    _compact._orjson_dumps is None, reason="orjson is a dependency: installed with the package"
)


def _json(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")


class _Text(str):
    """A `str` subclass: `json` writes it as its text; orjson refuses it."""


def _floats() -> list[float]:
    rng = random.Random(18)
    fixed = [0.0, -0.0, 1.0, 0.1, 1e-4, 1e-5, 9.265e-05, 1e-7, 1e15, 1e16, 1e22, 5e-324, 1.7976931348623157e308]
    drawn = [struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0] for _ in range(300)]
    drawn += [rng.random() * 10 ** rng.randint(-30, 30) for _ in range(300)]
    return fixed + [value for value in drawn if math.isfinite(value)]


_VALUES: list[Any] = [
    {"role": "user", "content": "What's the weather in Paris? (1)"},
    [{"id": "fc_6955b90028208b2c139f61768ead9be531c72b4ce89b4860", "arguments": '{"city":"Paris"}'}],
    ["yes,no", "a:e", "[null]", "v2.0", 1, -5, 2**63 - 1, 2**64 - 1, True, False],
    [None, {"a": None}],
    ["".join(map(chr, range(0x20))), "\x7f\u2028\u2029\ufeff\U0001f600", 'quote " and \\ backslash'],
    [2**64, -(2**63) - 1],  # past 64 bits: orjson refuses
    ["\ud800"],  # a lone surrogate: kept as its own bytes
    [float("nan"), float("inf"), -float("inf")],  # orjson writes null
    {1: "a non-string key"},
    [_Text("x")],
    ((1, 2), {"t": (3,)}),
    1e-5,
    None,
    "text",
]


@pytest.mark.parametrize("data", _VALUES, ids=lambda value: repr(value)[:40])
def test_compact_bytes_are_json_s_bytes(data: Any) -> None:
    assert compact_bytes(data) == _json(data)


def test_each_float_alone_is_written_as_json_writes_it() -> None:
    """orjson writes `1e-05` as `0.00001` and `1e+16` as `1e16`: every float goes to `json`."""
    for value in _floats():
        for data in ([value], {"temperature": value}, {"a": [1, "x", -value]}):
            assert compact_bytes(data) == _json(data), data


def test_a_deep_value_is_written_by_json() -> None:
    """orjson gives up past 255 levels; `json` writes it."""
    deep: list[Any] = []
    for _ in range(300):
        deep = [deep]
    assert compact_bytes(deep) == _json(deep)


def test_compact_keys_differ_exactly_where_json_s_text_does() -> None:
    """`1`, `1.0` and `true` are one Python key and three echoes; NaN and Infinity are not null (orjson
    writes null for all three); the same value is one key."""
    values: list[Any] = [1, 1.0, True, None, float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-5, 0.00001001]
    values += [[value] for value in values] + [{"a": value} for value in values]
    texts = [_json(value) for value in values]
    keys = [compact_key(value) for value in values]
    for text_a, key_a in zip(texts, keys, strict=True):
        for text_b, key_b in zip(texts, keys, strict=True):
            assert (key_a == key_b) == (text_a == text_b), (text_a, text_b)
    assert compact_key([{"a": 1.5}, "x"]) == compact_key([{"a": 1.5}, "x"])


def test_without_orjson_every_text_is_json_s(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_compact, "_orjson_dumps", None)
    for data in _VALUES:
        assert compact_bytes(data) == _json(data)
        assert compact_key(data) == _json(data)
