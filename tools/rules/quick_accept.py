"""A plain-Python check that accepts most valid values without jsonschema (P1).

Every tool call validates its arguments (G2) and its result (G5). jsonschema walks a value
through a resolver, an evolved validator per subschema and a dispatch per keyword: for a small
tool it costs more than the rest of the gateway's own work. Most tools' schemas use a handful of
keywords (`type`, `properties`, `required`, `additionalProperties`, `items`, lengths and bounds),
which a few closures decide directly.

`quick_accept(schema)` compiles such a schema into `accepts(value) -> bool`, or returns None when
the schema uses anything else (`$ref`, `pattern`, `anyOf`, an unknown keyword, …). `accepts`
answers True only for a value the full validator accepts; False means "not sure": the caller
then runs the full validator, which decides and words the errors. It is never less strict:
types are matched on exact Python types (what `json.loads` makes), and `enum`/`const` are
decided only for strings and null. Pure functions over plain data.
"""

from __future__ import annotations

from collections.abc import Callable

Accepts = Callable[[object], bool]

# Keywords that never make a value invalid (format is never asserted here, see validation.py).
_ANNOTATIONS = frozenset({
    "title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly", "format",
    "$schema",
})
_COUNTS = {"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"}
_BOUNDS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
_SUPPORTED = _ANNOTATIONS | _COUNTS | _BOUNDS | {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
}
_TYPES = {
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "string": lambda v: type(v) is str,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "number": lambda v: type(v) is int or type(v) is float,
    "integer": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
}
_NUMBER = _TYPES["number"]


class _Unsupported(Exception):
    pass


def quick_accept(schema) -> Accepts | None:
    """`accepts(value)` for a schema within the subset above, else None."""
    try:
        check = _compile(schema)
    except (_Unsupported, RecursionError):
        return None

    def accepts(value) -> bool:
        try:
            return check(value)
        except RecursionError:
            return False

    return accepts


def _compile(schema) -> Accepts:
    if schema is True or schema == {}:
        return lambda value: True
    if not isinstance(schema, dict) or not set(schema) <= _SUPPORTED:
        raise _Unsupported()
    checks = [_type(schema["type"])] if "type" in schema else []
    checks += [_count(keyword, schema[keyword]) for keyword in _COUNTS if keyword in schema]
    checks += [_bound(keyword, schema[keyword]) for keyword in _BOUNDS if keyword in schema]
    if "enum" in schema:
        checks.append(_one_of_literals(schema["enum"]))
    if "const" in schema:
        checks.append(_one_of_literals([schema["const"]]))
    if {"properties", "required", "additionalProperties"} & set(schema):
        checks.append(_object(schema))
    if "items" in schema:
        checks.append(_items(schema["items"]))
    if len(checks) == 1:
        return checks[0]

    def accepts(value) -> bool:
        for check in checks:
            if not check(value):
                return False
        return True

    return accepts


def _type(expected) -> Accepts:
    names = [expected] if isinstance(expected, str) else expected
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n in _TYPES for n in names):
        raise _Unsupported()
    tests = [_TYPES[name] for name in names]
    if len(tests) == 1:
        return tests[0]
    return lambda value: any(test(value) for test in tests)


def _count(keyword, limit) -> Accepts:
    if type(limit) is not int or limit < 0:
        raise _Unsupported()
    kind = {"Length": str, "Items": list, "Properties": dict}[keyword[3:]]
    if keyword.startswith("min"):
        return lambda value: type(value) is not kind or len(value) >= limit
    return lambda value: type(value) is not kind or len(value) <= limit


def _bound(keyword, limit) -> Accepts:
    if not _NUMBER(limit):
        raise _Unsupported()
    compare = {
        "minimum": lambda value: value >= limit,
        "maximum": lambda value: value <= limit,
        "exclusiveMinimum": lambda value: value > limit,
        "exclusiveMaximum": lambda value: value < limit,
    }[keyword]
    # A comparison that is not True (NaN included) is "not sure".
    return lambda value: not _NUMBER(value) or compare(value) is True


def _one_of_literals(options) -> Accepts:
    if not isinstance(options, list):
        raise _Unsupported()
    # Only strings and null are decided here: jsonschema's equality has its own rules for numbers
    # and booleans (1 equals 1.0, true does not equal 1), left to it.
    strings = frozenset(option for option in options if type(option) is str)
    has_null = any(option is None for option in options)
    return lambda value: (type(value) is str and value in strings) or (value is None and has_null)


def _object(schema) -> Accepts:
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list) or not all(type(r) is str for r in required):
        raise _Unsupported()
    checks = {name: _compile(subschema) for name, subschema in properties.items()}
    extra_check = None if extra is True or extra == {} else (lambda value: False) if extra is False else _compile(extra)
    required = tuple(required)

    def accepts(value) -> bool:
        if type(value) is not dict:
            return True
        for name in required:
            if name not in value:
                return False
        for name, item in value.items():
            check = checks.get(name)
            if check is not None:
                if not check(item):
                    return False
            elif extra_check is not None and not extra_check(item):
                return False
        return True

    return accepts


def _items(items) -> Accepts:
    if not isinstance(items, dict) and items is not True:
        raise _Unsupported()  # the array form means prefixItems in older dialects
    check = _compile(items)
    return lambda value: type(value) is not list or all(check(item) for item in value)
