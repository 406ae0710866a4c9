"""The JSON Schema 2020-12 metaschema certification checks schemas against (C3, C4), and a
plain-Python walk that accepts most valid schemas without jsonschema (P2).

Checking a tool's schema against the metaschema with jsonschema costs about 1 ms per schema
(an evolved validator and a `$ref` lookup per keyword of every subschema): for a server of
5,000 tools with their own schemas that was two thirds of a sync's CPU. Most schemas use the
common keywords with values of the plain types the metaschema asks for, which a walk decides
directly.

`plainly_valid(schema)` answers True only for a schema the metaschema accepts (as jsonschema
checks it here: formats are not asserted). False means "not sure": the caller then runs
jsonschema, which decides and words the error. It is never less strict: a keyword of the
metaschema that the walk does not know, or a value of an unexpected type, is "not sure"; a
keyword outside the metaschema constrains nothing there, as in the metaschema. Types are
matched on exact Python types (what `json.loads` makes). Pure functions over plain data.
"""

from urllib.parse import urljoin

from jsonschema import Draft202012Validator
from jsonschema_specifications import REGISTRY as SPECIFICATIONS


def flat_2020_12_metaschema() -> dict:
    """The 2020-12 metaschema with its seven vocabularies merged into one.

    The published metaschema composes vocabularies through `allOf` and `$dynamicRef`, which
    jsonschema resolves on every keyword: about 1.4 ms per tool schema. Merged, with
    `$dynamicRef: "#meta"` as `$ref: "#"` (what it resolves to when no dialect extends it), it
    accepts and rejects the same schemas about five times faster, which matters for 1,000-tool
    catalogs (P2).
    """
    top = Draft202012Validator.META_SCHEMA
    properties, defs = {}, {}
    for part in top["allOf"]:
        vocabulary = SPECIFICATIONS.contents(urljoin(top["$id"], part["$ref"]))
        properties.update(vocabulary.get("properties", {}))
        defs.update(vocabulary.get("$defs", {}))
    properties.update(top.get("properties", {}))
    return _static_refs({"type": ["object", "boolean"], "properties": properties, "$defs": defs})


def _static_refs(node):
    if isinstance(node, dict):
        if node.get("$dynamicRef") == "#meta":
            return {"$ref": "#"}
        return {k: _static_refs(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_static_refs(v) for v in node]
    return node


# Every keyword the metaschema constrains: one the walk does not decide below means "not sure".
METASCHEMA_KEYWORDS = frozenset(flat_2020_12_metaschema()["properties"])

_ONE_SCHEMA = ("items", "contains", "additionalProperties", "propertyNames", "if", "then", "else", "not",
               "unevaluatedItems", "unevaluatedProperties", "contentSchema")
_SCHEMA_LISTS = ("prefixItems", "allOf", "anyOf", "oneOf")  # non-empty arrays of schemas
# Objects of schemas (patternProperties' names are `format: regex`, not asserted).
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas", "definitions")
_STRINGS = ("$comment", "title", "description", "format", "contentEncoding", "contentMediaType", "pattern",
            "$ref", "$dynamicRef", "$schema")  # the last three: `format: uri(-reference)`, not asserted
_NUMBERS = ("maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum")
_COUNTS = ("maxLength", "minLength", "maxItems", "minItems", "maxContains", "minContains", "maxProperties", "minProperties")
_BOOLEANS = ("uniqueItems", "deprecated", "readOnly", "writeOnly")
_ARRAYS = ("enum", "examples")
_ANYTHING = ("const", "default")
_SIMPLE_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})

_DECIDED = frozenset(
    _ONE_SCHEMA + _SCHEMA_LISTS + _SCHEMA_MAPS + _STRINGS + _NUMBERS + _COUNTS + _BOOLEANS + _ARRAYS + _ANYTHING
    + ("type", "required", "multipleOf")
)
# What the walk leaves to jsonschema: `$id`, `$anchor`, `$dynamicAnchor` (patterns), `$vocabulary`,
# `dependentRequired`, `dependencies` and the deprecated `$recursive…` keywords.
UNDECIDED = METASCHEMA_KEYWORDS - _DECIDED


# jsonschema checks a schema recursively and gives up ("nested too deeply") somewhere past 150
# levels; deeper than this the walk is not sure, so that verdict stays jsonschema's.
MAX_DEPTH = 32


# How the walk decides each metaschema keyword's value (the first group a keyword is in wins).
_ONE, _MAP, _LIST, _STRING, _NUMBER, _COUNT, _BOOLEAN, _ARRAY, _TYPE, _REQUIRED, _MULTIPLE, _FREE, _UNDECIDED = range(13)
_GROUPS = (
    (_ONE, _ONE_SCHEMA), (_MAP, _SCHEMA_MAPS), (_LIST, _SCHEMA_LISTS), (_STRING, _STRINGS), (_NUMBER, _NUMBERS),
    (_COUNT, _COUNTS), (_BOOLEAN, _BOOLEANS), (_ARRAY, _ARRAYS), (_TYPE, ("type",)), (_REQUIRED, ("required",)),
    (_MULTIPLE, ("multipleOf",)), (_FREE, _ANYTHING),
)
_KIND = {
    keyword: next((kind for kind, keywords in _GROUPS if keyword in keywords), _UNDECIDED)
    for keyword in METASCHEMA_KEYWORDS
}


def plainly_valid(schema) -> bool:
    """True when `schema` is certainly valid against the 2020-12 metaschema; False: not sure.
    One table lookup per keyword: certification walks every subschema of 10,000 schemas (P2)."""
    stack = [(schema, 0)]
    while stack:
        node, depth = stack.pop()
        if type(node) is bool:
            continue
        if type(node) is not dict or depth > MAX_DEPTH:
            return False
        below = depth + 1
        for keyword, value in node.items():
            kind = _KIND.get(keyword)
            if kind is None:
                continue  # the metaschema says nothing about it
            if kind == _ONE:
                stack.append((value, below))
            elif kind == _MAP:
                if type(value) is not dict:
                    return False
                stack.extend((subschema, below) for subschema in value.values())
            elif kind == _LIST:
                if type(value) is not list or not value:
                    return False
                stack.extend((subschema, below) for subschema in value)
            elif not _value_fits(kind, value):
                return False
    return True


def _value_fits(kind: int, value) -> bool:
    """Whether `value` is certainly valid for a keyword of `kind` that holds no subschema."""
    kind_of_value = type(value)
    if kind == _STRING:
        return kind_of_value is str
    if kind == _TYPE:
        if kind_of_value is str:
            return value in _SIMPLE_TYPES
        return kind_of_value is list and bool(value) and _unique_strings(value) and all(item in _SIMPLE_TYPES for item in value)
    if kind == _NUMBER:
        return kind_of_value is int or kind_of_value is float
    if kind == _COUNT:
        return kind_of_value is int and value >= 0
    if kind == _BOOLEAN:
        return kind_of_value is bool
    if kind == _ARRAY:
        return kind_of_value is list
    if kind == _REQUIRED:
        return kind_of_value is list and _unique_strings(value)
    if kind == _MULTIPLE:
        return (kind_of_value is int or kind_of_value is float) and value > 0
    return kind == _FREE  # a metaschema keyword left to jsonschema: not sure


def _unique_strings(items: list) -> bool:
    return all(type(item) is str for item in items) and len(set(items)) == len(items)
