"""The JSON Schema keywords jsonschema runs unsafely on hostile input, rewritten; validation.py
puts them in every validator it builds.

- `pattern`, `patternProperties` and the `additionalProperties` that depends on them run on RE2,
  in time linear in the text (jsonschema uses Python's backtracking `re`: `^(a+)+$` on 28
  characters took 29 s holding the GIL). A pattern RE2 cannot run (backreferences, lookaround,
  too long, too big) raises UnsafePattern: there is no fallback to `re`. JSON Schema patterns
  are searches, not anchored matches, and RE2's `\\d`, `\\w` and `$` are ECMA-262's.
- `uniqueItems` is one pass over hashable forms of the items (jsonschema compares every pair).
"""

import reprlib
from functools import lru_cache

import re2
from jsonschema.exceptions import ValidationError

# Long enough for any real pattern (an e-mail address pattern is ~400 characters). RE2 bounds the
# memory of each compiled pattern: 4 MB takes `^[\p{L}\p{M} .'-]{1,200}$` (~3 MB), and the 64
# kept compiled bound a worker's share to about 256 MB whatever the catalogs hold.
MAX_PATTERN_LENGTH = 2000
_RE2_MAX_MEMORY = 4 << 20


def _re2_options():
    options = re2.Options()
    options.log_errors = False  # a tenant's bad pattern is a finding, not a line on our stderr
    options.max_mem = _RE2_MAX_MEMORY
    return options


_OPTIONS = _re2_options()


class UnsafePattern(Exception):
    """A pattern RE2 cannot run; validation.py turns it into UnusableSchema."""

    def __init__(self, pattern, reason):
        self.pattern, self.reason = pattern, reason
        super().__init__(pattern)


@lru_cache(maxsize=64)
def _regex(pattern: str):
    """`pattern` compiled by RE2, or UnsafePattern. Never Python's `re`."""
    reason = pattern_problem(pattern)
    if reason:
        raise UnsafePattern(pattern, reason)
    return re2.compile(pattern, options=_OPTIONS)


def pattern_problem(pattern) -> str | None:
    """Why RE2 cannot run `pattern`, or None."""
    if not isinstance(pattern, str):
        return "not a string"
    return _pattern_problem(pattern)


@lru_cache(maxsize=2048)
def _pattern_problem(pattern: str) -> str | None:
    if len(pattern) > MAX_PATTERN_LENGTH:
        return f"longer than {MAX_PATTERN_LENGTH} characters"
    try:
        re2.compile(pattern, options=_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else ""
        return reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
    return None


def _pattern(validator, pattern, instance, schema):
    # A search, not a match: JSON Schema patterns are not anchored unless they say so.
    if validator.is_type(instance, "string") and not _regex(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator, patterns, instance, schema):
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        regex = _regex(pattern)
        for key, value in instance.items():
            if regex.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator, additional, instance, schema):
    # jsonschema's own keyword, with the patternProperties test on RE2 (and the same messages).
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    regexes = [_regex(p) for p in schema.get("patternProperties", {})]
    extras = {k for k in instance if k not in properties and not any(r.search(k) for r in regexes)}
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        if "patternProperties" in schema:
            verb = "does" if len(extras) == 1 else "do"
            joined = ", ".join(repr(each) for each in sorted(extras))
            patterns = ", ".join(repr(each) for each in sorted(schema["patternProperties"]))
            yield ValidationError(f"{joined} {verb} not match any of the regexes: {patterns}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            names = ", ".join(repr(extra) for extra in sorted(extras, key=str))
            yield ValidationError(f"Additional properties are not allowed ({names} {verb} unexpected)")


def _unique_items(validator, unique, instance, schema):
    # jsonschema compares every pair of unhashable items: 20,000 objects took minutes. One pass
    # with a hashable form that keeps its equality (1 equals 1.0; true is not 1).
    if unique and validator.is_type(instance, "array"):
        seen = set()
        for item in instance:
            key = _comparable(item)
            if key in seen:
                yield ValidationError(f"{reprlib.repr(instance)} has non-unique elements")
                return
            seen.add(key)


def _comparable(value):
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list):
        return ("array", tuple(_comparable(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, _comparable(item)) for key, item in value.items()))
    return ("other", repr(value))


SAFE_KEYWORDS = {
    "pattern": _pattern, "patternProperties": _pattern_properties, "additionalProperties": _additional_properties,
    "uniqueItems": _unique_items,
}
