"""The quick check that spares jsonschema on most tool calls (P1) is never less strict than it
(G2, G5): over simple schemas and values of every JSON type, whatever it accepts the full
validator accepts; it does accept the common valid values (or it would save nothing); and any
schema outside its subset is left to jsonschema whole."""

import itertools

import pytest
from django.utils import translation
from jsonschema import Draft202012Validator

from tools.rules.quick_accept import quick_accept
from tools.rules.validation import all_errors, build_validator

SCHEMAS = [
    {"type": "object", "additionalProperties": False, "required": ["consulta"],
     "properties": {"consulta": {"type": "string", "minLength": 1, "maxLength": 5},
                    "solo": {"type": ["boolean", "null"]}}},
    {"type": "object", "required": ["items", "total"], "additionalProperties": {"type": "integer"},
     "properties": {"items": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string", "enum": ["a", "b"]}},
                    "total": {"type": "integer", "minimum": 0, "exclusiveMaximum": 10}}},
    {"type": "number", "maximum": 2.5, "exclusiveMinimum": -1},
    {"enum": ["x", None, 1, True]},
    {"const": None},
    {"const": "a", "title": "A", "description": "only a"},
    {"type": "object", "minProperties": 1, "maxProperties": 2},
    {"items": {"type": "integer"}},
    {},
]
VALUES = [
    None, True, False, 0, 1, 1.0, 2, 2.5, 2.6, -1, -0.5, 10, 1.5, float("nan"), "", "a", "b", "x", "abcdef",
    [], ["a"], ["a", "b"], ["a", "b", "a"], ["c"], [1], [1, 2.0], [True],
    {}, {"consulta": "abc"}, {"consulta": ""}, {"consulta": "abc", "solo": None}, {"consulta": "abc", "solo": 1},
    {"consulta": "abc", "otra": 1}, {"consulta": 1}, {"items": ["a"], "total": 3}, {"items": ["a"], "total": 3.0},
    {"items": ["a"], "total": True}, {"items": [], "total": 3}, {"items": ["a"], "total": 10},
    {"items": ["a"], "total": 1, "extra": 2}, {"items": ["a"], "total": 1, "extra": "2"}, {"a": 1, "b": 2, "c": 3},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_it_accepts_only_what_jsonschema_accepts(schema):
    """G2, G5: never a value the full validator refuses."""
    accepts, full = quick_accept(schema), Draft202012Validator(schema)
    assert accepts is not None
    values = VALUES + [dict(zip(("consulta", "solo"), pair, strict=True)) for pair in itertools.product(VALUES[:12], repeat=2)]
    wrongly = [value for value in values if accepts(value) and not full.is_valid(value)]
    assert wrongly == []
    assert any(accepts(value) for value in values)


def test_it_accepts_a_typical_tool_call_and_result():
    """P1: the gateway's usual arguments and results pass without jsonschema."""
    arguments, result = SCHEMAS[0], SCHEMAS[1]
    assert quick_accept(arguments)({"consulta": "abc", "solo": True})
    assert quick_accept(result)({"items": ["a", "b"], "total": 9, "x": 4})


@pytest.mark.parametrize("schema", [
    {"type": "string", "pattern": "^a"},
    {"$ref": "#/$defs/x", "$defs": {"x": {"type": "string"}}},
    {"anyOf": [{"type": "string"}]},
    {"type": "object", "properties": {"a": {"type": "string", "pattern": "b"}}},
    {"type": "object", "patternProperties": {"^a": {}}},
    {"type": "array", "items": [{"type": "string"}]},
    {"type": "number", "multipleOf": 2},
    {"type": "strange"},
    {"x-vendor": 1},
    False,
])
def test_it_leaves_anything_else_to_jsonschema(schema):
    """G2, G5: a keyword outside the subset (RE2 patterns, references among them) means no
    quick check at all."""
    assert quick_accept(schema) is None


def test_errors_still_come_from_the_full_validator():
    """G2: a value the quick check is not sure of gets jsonschema's words."""
    validator = build_validator(SCHEMAS[0])
    assert validator.accepts is not None and build_validator({"const": 1}).accepts(1) is False
    with translation.override("en"):
        assert all_errors(validator, {"consulta": "abc"}) is None
        assert "at most 5 characters" in all_errors(validator, {"consulta": "abcdef"})
        assert "otra" in all_errors(validator, {"consulta": "abc", "otra": 1})
        assert "must be 1" in all_errors(build_validator({"const": 1}), 2)
