"""Certification of inputSchema (C3) and outputSchema (C4)."""

import pytest
from django.utils import translation

from tools.rules import BLOCKING, WARNING, certify_definition, is_blocking
from tools.rules.schemas import check_input_schema, check_output_schema

from .seed_definitions import SCENARIOS, abrir_caso_soporte


def input_schema(**changes):
    schema = abrir_caso_soporte()["inputSchema"]
    for key, value in changes.items():
        if value is None:
            schema.pop(key, None)
        else:
            schema[key] = value
    return schema


def rules(findings):
    return [(f.rule, f.severity) for f in findings]


def text(findings):
    with translation.override("en"):
        return " | ".join(str(f.message) for f in findings)


def test_it_accepts_the_contract_example_schemas():
    """C3, C4: the seed's schemas (an enum-only property, a nullable type) are valid."""
    tool = abrir_caso_soporte()

    assert check_input_schema(tool["inputSchema"]) == []
    assert check_output_schema(tool["outputSchema"]) == []


def test_it_blocks_a_tool_without_an_input_schema():
    """C3: the gateway validates arguments against the inputSchema (G2)."""
    findings = certify_definition(abrir_caso_soporte(inputSchema=None), server_slug="crm", scenarios=SCENARIOS)

    assert rules(findings) == [("C3", BLOCKING)]


@pytest.mark.parametrize(
    "schema, where",
    [
        ({"type": "objet"}, "type"),
        ({"type": "object", "additionalProperties": False, "properties": {"a": {"type": "strin"}}}, "properties/a/type"),
        ({"type": "object", "additionalProperties": False, "required": "documento"}, "required"),
        ({"type": "object", "additionalProperties": False, "properties": {"a": {"maxLength": -1}}}, "properties/a/maxLength"),
        (["not", "an", "object"], "not a JSON object"),
    ],
)
def test_it_blocks_an_input_schema_that_is_not_valid_json_schema(schema, where):
    """C3: a valid JSON Schema; the message says where it breaks."""
    findings = check_input_schema(schema)

    assert rules(findings) == [("C3", BLOCKING)]
    assert where in text(findings)


def test_it_blocks_an_input_schema_whose_root_is_not_an_object():
    """C3: type object, as MCP and model APIs require."""
    findings = check_input_schema({"type": "array", "items": {"type": "string"}})

    assert rules(findings) == [("C3", BLOCKING)]
    assert 'type must be "object"' in text(findings)


@pytest.mark.parametrize("value", [None, True, {"type": "string"}])
def test_it_blocks_an_open_input_schema(value):
    """C3: additionalProperties false, so invented arguments never reach the tenant's system."""
    findings = check_input_schema(input_schema(additionalProperties=value))

    assert rules(findings) == [("C3", BLOCKING)]
    assert "additionalProperties" in text(findings)


def test_it_blocks_required_arguments_that_are_not_defined():
    """C3: every required name defined; with a closed schema no call could pass otherwise."""
    findings = check_input_schema(input_schema(required=["documento", "canal"]))

    assert rules(findings) == [("C3", BLOCKING)]
    assert "canal" in text(findings) and "documento" not in text(findings)


def test_it_warns_on_untyped_properties():
    """C3: every property typed; enum, const and $ref count as typed."""
    schema = input_schema(
        properties={
            "documento": {"type": "string"},
            "tipo": {"enum": ["falla"]},
            "origen": {"const": "chat"},
            "direccion": {"$ref": "#/$defs/direccion"},
            "notas": {"description": "Texto libre"},
            "extra": True,
        },
        required=["documento"],
    )
    schema["$defs"] = {"direccion": {"type": "string"}}

    findings = check_input_schema(schema)

    assert rules(findings) == [("C3", WARNING)]
    assert "notas, extra" in text(findings)


def test_it_blocks_a_tool_without_an_output_schema():
    """C4: outputSchema present, so the gateway can check structuredContent (G5)."""
    findings = certify_definition(abrir_caso_soporte(outputSchema=None), server_slug="crm", scenarios=SCENARIOS)

    assert rules(findings) == [("C4", BLOCKING)]
    assert is_blocking(findings)


@pytest.mark.parametrize(
    "schema",
    [{"type": "object", "properties": {"radicado": {"type": 5}}}, {"type": "string"}, {"properties": {}}],
)
def test_it_blocks_an_output_schema_that_is_invalid_or_not_an_object(schema):
    """C4: outputSchema valid and of type object."""
    assert rules(check_output_schema(schema)) == [("C4", BLOCKING)]


def test_it_honours_the_dialect_named_by_dollar_schema():
    """C3: a draft-07 schema is checked against draft 07, 2020-12 is the default."""
    draft7 = "http://json-schema.org/draft-07/schema#"
    valid = input_schema(**{"$schema": draft7})
    # "items" as an array is draft-07 tuple validation; 2020-12 wants a schema there.
    tuple_items = {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}
    with_tuple = input_schema(properties={"par": tuple_items}, required=["par"])

    assert check_input_schema(valid) == []
    assert check_input_schema({**with_tuple, "$schema": draft7}) == []
    assert rules(check_input_schema(with_tuple)) == [("C3", BLOCKING)]
