"""The structured-output schema check: the subset providers allow, and the field it names."""

from __future__ import annotations

from typing import Any

import pytest

from sandbox.engine._schema import mismatch

ITEM = {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"], "additionalProperties": False}
SCHEMA = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["open", "shipped"]},
        "count": {"type": "integer"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
    },
    "required": ["status"],
    "$defs": {"Item": ITEM},
}


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"status": "open", "count": 2, "note": None, "items": [{"sku": "a"}]}, None),
        ({"count": 2}, "output.status is required by the schema and missing"),
        ({"status": "lost"}, "output.status: 'lost' is not one of ['open', 'shipped']"),
        ({"status": "open", "count": True}, "output.count: True is not of type integer"),
        ({"status": "open", "count": 2.5}, "output.count: 2.5 is not of type integer"),
        ({"status": "open", "note": 3}, "output.note: 3 fits none of its anyOf options"),
        ({"status": "open", "items": [{"sku": "a", "size": 2}]}, "output.items[0].size is not a property the schema"),
        ({"status": "open", "items": [{}]}, "output.items[0].sku is required by the schema and missing"),
        (["open"], "output: ['open'] is not of type object"),
    ],
    ids=["fits", "required", "enum", "bool-is-no-integer", "float", "any-of", "additional", "ref", "root-type"],
)
def test_mismatch_names_the_field(value: Any, problem: str | None) -> None:
    found = mismatch(value, SCHEMA)
    assert found == problem if problem is None else found is not None and found.startswith(problem)


def test_gemini_openapi_schemas_read_upper_case_types_and_nullable() -> None:
    schema = {"type": "OBJECT", "properties": {"n": {"type": "INTEGER", "nullable": True}}, "required": ["n"]}
    assert mismatch({"n": None}, schema) is None
    assert mismatch({"n": "1"}, schema) == "output.n: '1' is not of type integer"
