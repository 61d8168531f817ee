"""The quick check says "valid" only where jsonschema does, and does say it for plain schemas."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpx.ops import OPERATIONS, plain_check

ECHO = {
    "type": "object",
    "properties": {"text": {"type": "string", "title": "Text"}},
    "required": ["text"],
    "title": "echoArguments",
}
PLAIN: list[dict[str, Any]] = [
    {},
    {"description": "anything"},
    ECHO,
    {"type": "object", "additionalProperties": False},
    {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 10},
            "x": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
            "b": {"type": "boolean"},
            "a": {"type": "array"},
            "z": {"type": "null"},
            "o": {"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]},
            "any": True,
        },
        "required": ["n"],
        "additionalProperties": False,
        "x-mcp-header": "ignored",
    },
    {"minimum": 3},
    {"required": ["a"]},
]
# The operations' own schemas: most are plain, and the rest must be left alone.
OPS = [op.input_schema() for op in OPERATIONS]
NOT_PLAIN: list[object] = [
    False,
    {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
    {"type": ["string", "null"]},
    {"enum": [1, 2]},
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}},
    {"type": "object", "additionalProperties": {"type": "string"}},
    {"type": "object", "properties": {"a": False}},
    {"type": "string", "pattern": "^a"},
    {"type": "number", "exclusiveMinimum": True},
    {"anyOf": [{"type": "string"}]},
    {"type": "array", "items": {"type": "string"}},
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["n", "x", "b", "a", "z", "o", "s", "text", "q"]), inner)
    ),
    max_leaves=12,
)


@pytest.mark.parametrize("schema", PLAIN + OPS)
@given(value=json_values)
def test_quick_yes_is_a_jsonschema_yes(schema: dict[str, Any], value: object) -> None:
    quick = plain_check(schema)
    assert quick is not None or schema in OPS
    if quick is not None and quick(value):
        assert jsonschema.validators.validator_for(schema)(schema).is_valid(value)


@pytest.mark.parametrize("schema", NOT_PLAIN)
def test_anything_else_is_left_to_jsonschema(schema: object) -> None:
    assert plain_check(schema) is None


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (ECHO, {"text": "hi"}),
        (ECHO, {"text": "hi", "more": 1}),
        (PLAIN[4], {"n": 3, "x": 0.5, "b": False, "o": {"s": ""}, "any": [1]}),
        (PLAIN[5], "not a number"),
    ],
)
def test_valid_arguments_pass_quickly(schema: dict[str, Any], value: object) -> None:
    quick = plain_check(schema)
    assert quick is not None and quick(value)


@pytest.mark.parametrize(
    "value",
    [
        {},
        {"text": 1},
        {"text": "x", "n": True},
        [],
        "text",
    ],
)
def test_invalid_arguments_are_not_passed(value: object) -> None:
    schema = {**ECHO, "properties": {**ECHO["properties"], "n": {"type": "integer"}}}
    quick = plain_check(schema)
    assert quick is not None and not quick(value)


def test_mcpx_call_shape_is_plain() -> None:
    call = next(op for op in OPERATIONS if op.name == "call")
    quick = plain_check(call.input_schema())
    assert quick is not None
    assert quick({"server": "s", "tool": "t", "arguments": {"a": 1}, "timeout": 2})
    for bad in ({"server": "s"}, {"server": "s", "tool": "t", "timeout": 0}, {"x": 1}):
        assert not quick(bad)
