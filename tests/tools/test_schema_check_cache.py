"""The schema checks certification keeps between tools and syncs (C3, C4, P2, issue 22): each
answer is kept under the digest of the schema's content, so a changed schema is always checked
again and a schema changed back gets its first answer; the number kept is bounded; and a kept
answer is the answer checking the schema afresh gives."""

import copy

from tools.rules.validation import PATTERN, REMOTE_REF, SCHEMA_CHECKS, SchemaChecks, schema_check, schema_error, schema_problems

VALID = {
    "type": "object", "additionalProperties": False, "required": ["codigo"],
    "properties": {"codigo": {"type": "string", "pattern": "^[A-Z]{3}-\\d{4}$"}, "cantidad": {"type": "integer"}},
}


def with_pattern(pattern):
    schema = copy.deepcopy(VALID)
    schema["properties"]["codigo"]["pattern"] = pattern
    return schema


def test_a_changed_schema_is_checked_again():
    """C3, P2: the same schema object changed in place (and a copy changed) after its check
    gets the new answer: the cache is keyed by content, never by object or name."""
    checks = SchemaChecks(size=100)
    schema = copy.deepcopy(VALID)
    assert checks.check(schema) == (None, ())
    schema["properties"]["codigo"]["pattern"] = "^(a)\\1$"  # a backreference: RE2 cannot run it
    error, problems = checks.check(schema)
    assert error is None and [problem.kind for problem in problems] == [PATTERN]
    schema["properties"]["cantidad"]["type"] = 5  # no longer a valid JSON Schema
    error, problems = checks.check(schema)
    assert error and "cantidad" in error and problems == ()
    assert checks.check(copy.deepcopy(VALID)) == (None, ())  # changed back: the first answer again


def test_keys_in_another_order_are_the_same_schema():
    """P2: a server that sends the same schema with its keys reordered is not checked again."""
    checks = SchemaChecks(size=100)
    reordered = {key: VALID[key] for key in reversed(list(VALID))}
    checks.check(VALID)
    checks.check(reordered)
    assert len(checks) == 1


def test_it_keeps_at_most_its_size_and_drops_the_least_recently_used():
    """P2, issue 22: the kept answers are bounded; an answer dropped is computed again, the same."""
    checks = SchemaChecks(size=3)
    schemas = [with_pattern(f"^[A-Z]{{{count}}}$") for count in range(1, 6)]
    for schema in schemas[:3]:
        checks.check(schema)
    checks.check(schemas[0])  # used again: now the most recent
    for schema in schemas[3:]:
        checks.check(schema)
    assert len(checks) == 3
    assert set(checks._answers) == {SchemaChecks._digest(schema) for schema in (schemas[0], *schemas[3:])}
    remote = {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}
    for schema in schemas + [remote]:
        assert checks.check(schema) == SchemaChecks(size=0).check(schema)
    assert len(checks) == 3
    assert len(SCHEMA_CHECKS) <= SCHEMA_CHECKS.size
    checks.clear()
    assert len(checks) == 0 and checks.check(schemas[0]) == SchemaChecks(size=0).check(schemas[0])


def test_a_kept_answer_is_the_answer_of_a_fresh_check():
    """C3, C4: for schemas valid, invalid, not JSON, unsafe (remote reference, backreference,
    patternProperties under unevaluatedProperties), a cached check says what the uncached
    questions (`schema_error`, `schema_problems`) say, the first time and the second."""
    schemas = [
        VALID,
        with_pattern("^(?=x)"),
        {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}},
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}},
        {"type": "object", "patternProperties": {"^x": {}}, "unevaluatedProperties": False},
        {"type": "object", "properties": {"a": {"type": "nope"}}},
        {"type": "object", "minimum": float("nan")},
        {"type": "object", "properties": {1: {"type": "string"}, "b": {}}},
        ["not", "an", "object"],
    ]
    checks = SchemaChecks(size=100)
    for schema in schemas:
        error = schema_error(schema)
        expected = (error, () if error else schema_problems(schema))
        assert checks.check(schema) == expected
        assert checks.check(schema) == expected
        assert schema_check(schema) == expected
    kinds = [problem.kind for problem in checks.check(schemas[2])[1]]
    assert kinds == [REMOTE_REF]
