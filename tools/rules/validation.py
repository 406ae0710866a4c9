"""The one place that builds JSON Schema validators for tenants' schemas: the gateway's arguments
(G2) and results (G5), certification (C3, C4) and the live probe (C8) all come here.

A schema comes from a tenant's server and the value it checks from a customer through the model,
so both are hostile, and jsonschema's defaults trust them:
- it fetches a remote `$ref` with urllib (no timeout, redirects followed, before any outbound
  check). Here no `$ref` is ever retrieved: the registry refuses every URI that is not inside the
  schema itself, and such a `$ref` is a problem of the schema, found before anything runs;
- it runs `pattern` and `patternProperties` with Python's backtracking `re` (`^(a+)+$` on 28
  characters: 29 s holding the GIL). Here they run on RE2, in time linear in the text; a pattern
  RE2 cannot run (backreferences, lookaround) is a problem, never a fallback to `re`. jsonschema
  also evaluates `patternProperties` with `re` inside `unevaluatedProperties`, where no keyword
  can be replaced, so that combination is a problem too. `format` is never asserted (no format
  checker), so `format: regex` compiles nothing;
- a `$ref` that leads back to itself without going deeper into the value recurses until Python
  gives up: a problem, found by looking at the schema;
- `uniqueItems` compares every pair of items: here it is one pass over hashable forms;
- a value nested deeper than Python's stack is an error of the value, never an exception.

`schema_problems(schema)` says what is wrong (empty when the schema is usable);
`build_validator(schema)` returns a validator or raises `UnusableSchema`; `first_error` and
`all_errors` check a value (a simple schema's valid values are accepted by quick_accept.py
without jsonschema; anything else, and every error, is jsonschema's). The keywords that replace jsonschema's are in keywords.py. Pure
functions: no network, no database.
"""

import hashlib
import json
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from itertools import islice

from jsonschema import Draft6Validator, Draft7Validator, Draft201909Validator, Draft202012Validator, validators
from jsonschema.exceptions import best_match
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import specification_with

from .keywords import SAFE_KEYWORDS, UnsafePattern, pattern_problem
from .metaschema import flat_2020_12_metaschema, plainly_valid
from .quick_accept import Accepts, quick_accept
from .value_messages import reader_message

# Problem kinds, each with one English sentence for records and logs; certification renders its
# own translated findings from the kind and the detail.
INVALID = "invalid"
REMOTE_REF = "remote_ref"
MISSING_REF = "missing_ref"
REF_LOOP = "ref_loop"
PATTERN = "pattern"
UNSUPPORTED = "unsupported"

# Errors read before sorting: a 100,000-item array of bad values must not become 100,000 errors.
_MAX_ERRORS_READ = 100
_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
# Keywords whose subschemas apply to the same value (not to a part of it): a cycle through only
# these never ends.
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MANY = ("allOf", "anyOf", "oneOf", "extends")
_IN_PLACE_MAP = ("dependentSchemas", "dependencies")


@dataclass(frozen=True)
class SchemaProblem:
    kind: str
    detail: str  # the `$ref`, the pattern, or jsonschema's own words
    reason: str = ""  # why RE2 refused a pattern, in its words

    def __post_init__(self):
        # A hostile schema's `$ref` or pattern can be megabytes long; a message needs its start.
        if len(self.detail) > 200:
            object.__setattr__(self, "detail", self.detail[:199] + "…")

    def __str__(self):
        return {
            INVALID: "not a valid JSON Schema: {}",
            REMOTE_REF: "$ref {} is outside the schema; remote references are never fetched",
            MISSING_REF: "$ref {} points to nothing in the schema",
            REF_LOOP: "$ref {} leads back to itself without going deeper into the value",
            PATTERN: "pattern {} cannot run in linear time (RE2: {})",
            UNSUPPORTED: "{}",
        }[self.kind].format(self.detail, self.reason)


class UnusableSchema(Exception):
    """A schema that cannot be used safely; `.message` says why, in English."""

    def __init__(self, problems):
        self.problems = tuple(problems)
        self.message = "; ".join(str(p) for p in self.problems)
        super().__init__(self.message)


def validator_class(schema):
    """The JSON Schema dialect named by `$schema`; 2020-12 (MCP's default) otherwise."""
    if not isinstance(schema, dict) or not isinstance(schema.get("$schema"), str):
        return Draft202012Validator
    with warnings.catch_warnings():
        # An unknown $schema falls back to the default with a DeprecationWarning.
        warnings.simplefilter("ignore", DeprecationWarning)
        return validators.validator_for(schema, default=Draft202012Validator)


# --- Is it a JSON Schema at all ----------------------------------------------------------------


def schema_error(schema) -> str | None:
    """Why `schema` is not a valid JSON Schema, or None if it is."""
    if not isinstance(schema, dict):
        return "not a JSON object"
    key = _canonical(schema)
    return "not JSON" if key is None else _schema_error(key)


@lru_cache(maxsize=4096)
def _schema_error(key: str) -> str | None:
    # Keyed by the canonical JSON: schemas repeat across tools and across syncs of the same
    # catalog, and re-certifying an unchanged one is free.
    return _error_of(json.loads(key))


def _error_of(schema) -> str | None:
    cls = validator_class(schema)
    if cls is Draft202012Validator and plainly_valid(schema):
        return None  # what jsonschema would say, decided without it (metaschema.py)
    try:
        error = best_match(_meta_validator(cls).iter_errors(schema))
    except RecursionError:
        return "nested too deeply"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


@lru_cache(maxsize=None)
def _meta_validator(cls):
    if cls is Draft202012Validator:
        return Draft202012Validator(flat_2020_12_metaschema())
    return cls(cls.META_SCHEMA)


@lru_cache(maxsize=None)
def _safe_class(cls):
    return validators.extend(cls, {k: v for k, v in SAFE_KEYWORDS.items() if k in cls.VALIDATORS})


# --- References: never fetched, never looping --------------------------------------------------


def _never_retrieve(uri):
    raise NoSuchResource(ref=uri)


_NO_RETRIEVAL = Registry(retrieve=_never_retrieve)


@dataclass
class _Prepared:
    cls: type
    schema: dict  # a copy without `$schema` on any subschema (see _prepare)
    problems: tuple


def schema_check(schema) -> tuple[str | None, tuple[SchemaProblem, ...]]:
    """`schema_error(schema)` and, when it is None, `schema_problems(schema)`, serialising the
    schema once for both (certification asks both of every tool's two schemas, P2)."""
    return SCHEMA_CHECKS.check(schema)


class SchemaChecks:
    """The answers of `schema_check`, kept for at most `size` schemas (the least recently used
    goes first), each under the SHA-256 of its canonical JSON: any change to a schema is another
    key, so a changed schema is always checked again.

    A sync certifies both schemas of every new or changed tool: 10,000 schemas for a 5,000-tool
    server, and a re-sync that changed descriptions brings the same schemas back. The answer
    depends on the schema alone, so it is reused; kept by digest, not by text, an entry costs
    about 200 bytes however large the schema (P2). Safe to share between threads."""

    def __init__(self, size: int):
        self.size = size
        self._answers: OrderedDict[bytes, tuple] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._answers)

    def clear(self) -> None:
        with self._lock:
            self._answers.clear()

    def check(self, schema) -> tuple[str | None, tuple[SchemaProblem, ...]]:
        if not isinstance(schema, dict):
            return "not a JSON object", ()
        key = _canonical(schema)
        if key is None:
            return "not JSON", ()
        digest = self._digest(key)
        with self._lock:
            answer = self._answers.get(digest)
            if answer is not None:
                self._answers.move_to_end(digest)
                return answer
        answer = _check(key)
        with self._lock:
            self._answers[digest] = answer
            while len(self._answers) > self.size:
                self._answers.popitem(last=False)
        return answer

    @staticmethod
    def _digest(schema) -> bytes:
        """The key of `schema` (or of its canonical JSON)."""
        key = schema if isinstance(schema, str) else _canonical(schema)
        return hashlib.sha256(key.encode()).digest()


def _check(key: str) -> tuple[str | None, tuple[SchemaProblem, ...]]:
    # One parse for both questions, and no private copy: nothing here changes the schema.
    schema = json.loads(key)
    error = _error_of(schema)
    if error:
        return error, ()
    return None, _walk(schema, key, validator_class(schema))[1]


# Two schemas a tool, for servers of up to ASIXTO_MAX_TOOLS_PER_SERVER (5,000) tools: a few MB.
SCHEMA_CHECKS = SchemaChecks(size=20_000)


def schema_problems(schema) -> tuple[SchemaProblem, ...]:
    """What makes `schema` unusable: not valid, a `$ref` outside it or to nothing in it, a `$ref`
    loop, a pattern RE2 cannot run. Empty when it can be used."""
    return _prepared(schema).problems


@dataclass(frozen=True)
class Validator:
    """A compiled schema: jsonschema's validator (`full`), and `accepts`, a plain check that
    accepts most valid values of a simple schema without it (see quick_accept.py), or None."""

    full: object
    accepts: Accepts | None = None

    def is_valid(self, instance) -> bool:
        return (self.accepts is not None and self.accepts(instance)) or self.full.is_valid(instance)

    def iter_errors(self, instance):
        return self.full.iter_errors(instance)


# Dialects whose keywords of the quick subset mean the same (an integer may be written 1.0).
_QUICK_DIALECTS = (Draft202012Validator, Draft201909Validator, Draft7Validator, Draft6Validator)


def build_validator(schema) -> Validator:
    """A validator for `schema` that never fetches and never backtracks, or UnusableSchema."""
    prepared = _prepared(schema)
    if prepared.problems:
        raise UnusableSchema(prepared.problems)
    accepts = quick_accept(prepared.schema) if prepared.cls in _QUICK_DIALECTS else None
    return Validator(_safe_class(prepared.cls)(prepared.schema, registry=_NO_RETRIEVAL), accepts)


def _prepared(schema) -> _Prepared:
    key = _canonical(schema)
    problem = "not a JSON object" if not isinstance(schema, dict) else "not JSON" if key is None else _schema_error(key)
    if problem:
        return _Prepared(Draft202012Validator, {}, (SchemaProblem(INVALID, problem),))
    return _prepare(key)


def _canonical(schema) -> str | None:
    try:
        return json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return None


@lru_cache(maxsize=1024)
def _prepare(key: str) -> _Prepared:
    schema = json.loads(key)  # a private copy: `$schema` is removed from it below
    cls = validator_class(schema)
    nodes, problems = _walk(schema, key, cls)
    if nodes is None:
        return _Prepared(cls, {}, problems)
    for node in nodes:
        # jsonschema picks the class of every subschema it descends into by its `$schema`, which
        # would swap our RE2 keywords for the stock ones; the dialect was chosen from the root.
        if isinstance(node.get("$schema"), str):
            del node["$schema"]
    return _Prepared(cls, schema, problems)


def _walk(schema: dict, key: str, cls) -> tuple[list[dict] | None, tuple[SchemaProblem, ...]]:
    """Every subschema of `schema` (`key`: its canonical JSON) and what makes it unusable; no
    subschemas (None) when it is too deep to walk."""
    try:
        if any(f'"{keyword}"' in key for keyword in _REF_KEYWORDS):
            nodes, problems = _walk_with_refs(schema, specification_with(cls.ID_OF(cls.META_SCHEMA)))
        else:
            # Most schemas hold no reference: a plain walk over the keywords, five times faster (P2).
            nodes, problems = _subschemas(schema), []
    except RecursionError:
        return None, (SchemaProblem(INVALID, "nested too deeply"),)
    problems += _keyword_problems(nodes)
    return nodes, tuple(dict.fromkeys(problems))


# Keywords whose values are subschemas (every dialect's), for the walk of a schema without `$ref`.
_ONE_SCHEMA = ("additionalProperties", "additionalItems", "items", "contains", "propertyNames", "not", "if", "then",
               "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema", "extends")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items", "extends")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")


_SUBSCHEMA_KEYWORDS = frozenset(_ONE_SCHEMA + _SCHEMA_LISTS + _SCHEMA_MAPS)


def _subschemas(schema) -> list[dict]:
    nodes, stack = [], [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        nodes.append(node)
        if _SUBSCHEMA_KEYWORDS.isdisjoint(node):
            continue  # a leaf, as most are: no keyword to look for (P2)
        for keyword in _ONE_SCHEMA:
            if isinstance(node.get(keyword), dict):
                stack.append(node[keyword])
        for keyword in _SCHEMA_LISTS:
            if isinstance(node.get(keyword), list):
                stack.extend(node[keyword])
        for keyword in _SCHEMA_MAPS:
            if isinstance(node.get(keyword), dict):
                stack.extend(node[keyword].values())
    return nodes


def _keyword_problems(nodes) -> list[SchemaProblem]:
    problems: list[SchemaProblem] = []
    uses_unevaluated = uses_pattern_properties = False
    for node in nodes:
        if "pattern" in node:
            _check_pattern(node["pattern"], problems)
        if isinstance(node.get("patternProperties"), dict):
            uses_pattern_properties = True
            for pattern in node["patternProperties"]:
                _check_pattern(pattern, problems)
        uses_unevaluated = uses_unevaluated or "unevaluatedProperties" in node
    if uses_unevaluated and uses_pattern_properties:
        problems.append(SchemaProblem(UNSUPPORTED, "patternProperties cannot be combined with unevaluatedProperties"))
    return problems


def _walk_with_refs(schema, specification):
    """Every subschema (reached through keywords or `$ref`s, each once), with the problems of
    its references. Iterative: a deep schema must not exhaust the stack here."""
    root = specification.create_resource(schema)
    registry = _NO_RETRIEVAL.with_resource(root.id() or "", root).crawl()
    seen: dict[int, dict] = {}
    edges: dict[int, list[tuple[int, str]]] = {}
    problems: list[SchemaProblem] = []
    stack = [(root, registry.resolver_with_root(root))]
    while stack:
        resource, resolver = stack.pop()
        node = resource.contents
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen[id(node)] = node
        node_edges = edges.setdefault(id(node), [])
        for keyword in _REF_KEYWORDS:
            ref = node.get(keyword)
            if not isinstance(ref, str):
                continue
            try:
                resolved = resolver.lookup(ref)
            except Unresolvable as exc:
                # A document that would have to be retrieved, or a pointer/anchor that is not there.
                problems.append(SchemaProblem(REMOTE_REF if type(exc) is Unresolvable else MISSING_REF, ref))
                continue
            target = resolved.contents
            if isinstance(target, dict):
                node_edges.append((id(target), ref))
                stack.append((Resource(contents=target, specification=specification), resolved.resolver))
        for keyword in _IN_PLACE_ONE:
            if isinstance(node.get(keyword), dict):
                node_edges.append((id(node[keyword]), keyword))
        for keyword in _IN_PLACE_MANY:
            value = node.get(keyword)
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, dict):
                    node_edges.append((id(item), keyword))
        for keyword in _IN_PLACE_MAP:
            if isinstance(node.get(keyword), dict):
                node_edges += [(id(item), keyword) for item in node[keyword].values() if isinstance(item, dict)]
        for sub in resource.subresources():
            stack.append((sub, resolver.in_subresource(sub)))
    loop = _in_place_loop(edges)
    if loop:
        problems.append(SchemaProblem(REF_LOOP, loop))
    return list(seen.values()), problems


def _check_pattern(pattern, problems):
    reason = pattern_problem(pattern) if isinstance(pattern, str) else None
    if reason:
        problems.append(SchemaProblem(PATTERN, pattern, reason))


def _in_place_loop(edges) -> str | None:
    """The keyword (or `$ref`) that closes a cycle of subschemas applied to the same value, if any."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in edges:
        if start in state:
            continue
        state[start] = 1
        path = [(start, iter(edges.get(start, ())))]
        while path:
            node, children = path[-1]
            for child, label in children:
                if state.get(child) == 1:
                    return label
                if child not in state:
                    state[child] = 1
                    path.append((child, iter(edges.get(child, ()))))
                    break
            else:
                state[node] = 2
                path.pop()
    return None


# --- Checking a value ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ValueProblem:
    where: str  # "items/0/name", empty at the root
    message: str

    def __str__(self):
        return f"{self.where}: {self.message}" if self.where else self.message


_TOO_DEEP = ValueProblem("", "the value is nested too deeply to check")


def _problem(error, *, in_reader_language=False) -> ValueProblem:
    # jsonschema quotes the whole offending value; a 100 KB string is no help to anyone reading.
    message = reader_message(error) if in_reader_language else error.message
    message = message if len(message) <= 300 else message[:299] + "…"
    return ValueProblem("/".join(str(part) for part in error.absolute_path)[:200], message)


def _checked(check):
    """Run `check`; a value deeper than the stack is a problem of the value, and a `$ref` that
    slipped past build_validator (it cannot) still never escapes as anything but UnusableSchema."""
    try:
        return check()
    except RecursionError:
        return [_TOO_DEEP]
    except UnsafePattern as exc:
        raise UnusableSchema([SchemaProblem(PATTERN, exc.pattern, exc.reason)]) from None
    except Unresolvable as exc:
        raise UnusableSchema([SchemaProblem(MISSING_REF, str(getattr(exc, "ref", "")))]) from None


def value_error(validator, instance) -> ValueProblem | None:
    """The most relevant problem of `instance`, or None."""

    def check():
        if validator.is_valid(instance):  # the common case, and much cheaper than collecting errors
            return []
        error = best_match(islice(validator.iter_errors(instance), _MAX_ERRORS_READ))
        return [_problem(error)] if error is not None else []

    problems = _checked(check)
    return problems[0] if problems else None


def first_error(validator, instance) -> str | None:
    problem = value_error(validator, instance)
    return str(problem) if problem else None


def all_errors(validator, instance, limit=3) -> str | None:
    """Up to `limit` problems, so a model can correct all of them in one go (G2), in the active
    language (the conversation's, when the gateway calls)."""

    def check():
        if validator.is_valid(instance):
            return []
        errors = [_problem(e, in_reader_language=True) for e in islice(validator.iter_errors(instance), _MAX_ERRORS_READ)]
        return sorted(errors, key=lambda p: (p.where, p.message))

    return "; ".join(str(p) for p in _checked(check)[:limit]) or None
