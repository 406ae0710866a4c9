"""A per-process cache of the tools the gateway looks up, kept honest by a catalog generation.

Every call looks its tool up; the ORM query for that (tool + server) costs about a millisecond,
most of a bare tool call (P1). Each tenant has a generation token in the shared cache (Redis,
keyed by schema); anything that changes a tool or a server replaces it — at once, and again
when the transaction commits, so no process keeps what it read in between. A process re-reads
the tokens at most every REVALIDATE_SECONDS, so a change made elsewhere (an admin disabling a
tool) reaches every worker within that time; a change made in this process applies at once.
It re-reads the tokens of every tenant it knows in one round trip (MGET), so a worker serving
hundreds of tenants does not pay one Redis request per call.
Lookups inside a transaction never use or fill the cache: they may see uncommitted rows."""

import time
import uuid

from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django_tenants.utils import schema_context

GENERATION_KEY = "asixto:catalog-generation:{schema}"
REVALIDATE_SECONDS = 0.25
_MAX_ENTRIES = 10000
_entries: dict[tuple, tuple[bytes, object]] = {}
_generations: dict[str, bytes] = {}  # schema → token, as read at _read_at
_read_at = 0.0


def _redis():
    # The Django cache's own Redis client: a plain GET/SET, no pickling.
    return cache._cache.get_client(write=True)


def _key(schema):
    return GENERATION_KEY.format(schema=schema)


def _bump():
    schema = connection.schema_name
    _redis().set(_key(schema), uuid.uuid4().hex)
    _generations.pop(schema, None)


def catalog_changed():
    """Call after any change to tools or servers of the current tenant."""
    _bump()
    schema = connection.schema_name

    def after_commit():
        with schema_context(schema):
            _bump()

    transaction.on_commit(after_commit)


def _generation(schema):
    token = _generations.get(schema)
    if token is not None and time.monotonic() - _read_at < REVALIDATE_SECONDS:
        return token
    return _read_generations(schema)[schema]


def _read_generations(schema):
    """Every known tenant's token (and `schema`'s) in one round trip."""
    global _read_at
    read_at = time.monotonic()
    if len(_generations) >= _MAX_ENTRIES:
        _generations.clear()
    schemas = list({*_generations, schema})
    client = _redis()
    tokens = dict(zip(schemas, client.mget([_key(name) for name in schemas]), strict=True))
    for name in [name for name, token in tokens.items() if token is None]:
        # A tenant nobody has changed yet: give it a token (the first writer wins).
        client.set(_key(name), uuid.uuid4().hex, nx=True)
        tokens[name] = client.get(_key(name))
    _generations.update(tokens)
    _read_at = read_at
    return tokens


def cached(key: tuple, load):
    """`load()` through the cache, under the current schema and generation."""
    db = connections[DEFAULT_DB_ALIAS]  # this thread's connection, looked up once
    if db.in_atomic_block:
        return load()
    schema = db.schema_name
    generation = _generation(schema)
    entry_key = (schema, *key)
    entry = _entries.get(entry_key)
    if entry is not None and entry[0] == generation:
        return entry[1]
    value = load()
    if len(_entries) >= _MAX_ENTRIES:
        _entries.clear()
    _entries[entry_key] = (generation, value)
    return value
