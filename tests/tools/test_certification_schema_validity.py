"""Certification's quick check of a schema against the metaschema (C3, C4, P2): it decides a
plainly valid schema without jsonschema, and never calls valid what jsonschema rejects."""

import copy
import random

from jsonschema import Draft202012Validator

from tools.rules.metaschema import flat_2020_12_metaschema, plainly_valid
from tools.rules.schemas import check_input_schema
from tools.rules.validation import schema_error

from .seed_definitions import abrir_caso_soporte

METASCHEMA = Draft202012Validator(flat_2020_12_metaschema())

# A schema using every keyword the quick check decides, each with a valid value.
EVERY_KEYWORD = {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "$comment": "c", "title": "t", "description": "d",
    "type": "object", "additionalProperties": False, "required": ["a", "b"], "minProperties": 0, "maxProperties": 9,
    "properties": {
        "a": {"type": ["string", "null"], "minLength": 1, "maxLength": 5, "pattern": "^[a-z]+$", "format": "email",
              "contentEncoding": "base64", "contentMediaType": "text/plain", "contentSchema": {"type": "string"}},
        "b": {"type": "array", "prefixItems": [{"const": 1}], "items": {"enum": ["x", 2, None]}, "contains": True,
              "minContains": 1, "maxContains": 3, "minItems": 0, "maxItems": 4, "uniqueItems": True, "unevaluatedItems": False},
        "c": {"type": "number", "minimum": 0, "maximum": 1.5, "exclusiveMinimum": -1, "exclusiveMaximum": 2, "multipleOf": 0.5},
        "d": {"anyOf": [{"type": "integer"}, {"type": "boolean"}], "default": 3, "examples": [1], "deprecated": False,
              "readOnly": True, "writeOnly": False},
        "e": {"allOf": [{"$ref": "#/$defs/x"}], "oneOf": [True], "not": {"type": "null"},
              "if": {"type": "string"}, "then": {"minLength": 1}, "else": {"type": "integer"}},
        "f": {"type": "object", "patternProperties": {"^x": {}}, "propertyNames": {"maxLength": 3},
              "dependentSchemas": {"a": {}}, "unevaluatedProperties": False, "$dynamicRef": "#x"},
    },
    "$defs": {"x": {"type": "string"}}, "definitions": {"y": False}, "x-vendor": {"anything": [1, {"type": 5}]},
}

# Values that are wrong for some keyword and right for others.
ODD_VALUES = [
    -1, 0, 1.0, 2.5, float("nan"), True, False, None, "", "x", "integer", "objects", [], [1], ["a", "a"], ["a", 1],
    ["string", "string"], ["string", "null"], {}, {"type": 1}, {"a": 1}, [{}], [True, {"type": "nope"}],
]


def mutations(schema, rng, count):
    """`count` copies of `schema`, each with one value somewhere in it replaced by an odd one."""
    paths = []

    def collect(node, path):
        if isinstance(node, dict):
            for key, value in node.items():
                paths.append(path + [key])
                collect(value, path + [key])
        elif isinstance(node, list):
            for index, value in enumerate(node):
                paths.append(path + [index])
                collect(value, path + [index])

    collect(schema, [])
    for _ in range(count):
        mutated = copy.deepcopy(schema)
        *parent_path, last = rng.choice(paths)
        parent = mutated
        for step in parent_path:
            parent = parent[step]
        parent[last] = copy.deepcopy(rng.choice(ODD_VALUES))
        yield mutated


def jsonschema_accepts(schema) -> bool:
    return not any(True for _ in METASCHEMA.iter_errors(schema))


def test_it_decides_plainly_valid_schemas_without_jsonschema():
    """P2: the schemas of a real catalog are decided by the quick check (else it saves nothing)."""
    tool = abrir_caso_soporte()

    assert plainly_valid(EVERY_KEYWORD)
    assert plainly_valid(tool["inputSchema"]) and plainly_valid(tool["outputSchema"])


def test_it_never_calls_valid_a_schema_jsonschema_rejects():
    """C3, C4: one value at a time replaced by an odd one, thousands of times: whenever the quick
    check says valid, jsonschema agrees; and certification's verdict is jsonschema's either way."""
    rng = random.Random(22)
    decided = rejected = 0
    for schema in [EVERY_KEYWORD, abrir_caso_soporte()["inputSchema"], abrir_caso_soporte()["outputSchema"]]:
        for mutated in mutations(schema, rng, 1500):
            valid = jsonschema_accepts(mutated)
            rejected += not valid
            if plainly_valid(mutated):
                decided += 1
                assert valid, mutated
            assert (schema_error(mutated) is None) == valid, mutated

    assert decided > 1000 and rejected > 500  # both sides were exercised


def test_it_leaves_keywords_it_does_not_decide_to_jsonschema():
    """C3: `$anchor` has a pattern and `dependentRequired` a shape the quick check leaves to
    jsonschema, which words the error as before."""
    assert not plainly_valid({"type": "object", "$anchor": "1bad"})
    assert schema_error({"type": "object", "$anchor": "1bad"}) is not None
    assert not plainly_valid({"type": "object", "dependentRequired": {"a": ["b", "b"]}})
    assert schema_error({"type": "object", "dependentRequired": {"a": ["b", "b"]}}) is not None
    assert schema_error({"type": "object", "dependentRequired": {"a": ["b"]}}) is None


def test_it_leaves_a_deeply_nested_schema_to_jsonschema():
    """C3: past the quick check's depth the verdict (valid, or "nested too deeply") is jsonschema's."""
    schema = {"type": "string"}
    for _ in range(400):
        schema = {"type": "object", "additionalProperties": False, "properties": {"a": schema}}

    assert not plainly_valid(schema)
    findings = check_input_schema(schema)
    assert findings and "nested too deeply" in str(findings[0].message)
