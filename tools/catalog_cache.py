"""A per-process cache of the tools the gateway looks up, kept honest by a catalog generation.

Every call looks its tool up; the ORM query for that (tool + server) costs about a millisecond,
most of a bare tool call (P1). Each tenant has a generation token in the shared cache (Redis,
keyed by schema); anything that changes a tool or a server replaces it — at once, and again
when the transaction commits, so no process keeps what it read in between. A process re-reads
the token at most every REVALIDATE_SECONDS, so a change made elsewhere (an admin disabling a
tool) reaches every worker within that time; a change made in this process applies at once.
Lookups inside a transaction never use or fill the cache: they may see uncommitted rows."""

import time
import uuid

from django.core.cache import cache
from django.db import connection, transaction
from django_tenants.utils import schema_context

GENERATION_KEY = "tools:catalog-generation"
REVALIDATE_SECONDS = 0.25
_MAX_ENTRIES = 10000
_entries: dict[tuple, tuple[bytes, object]] = {}
_generations: dict[str, tuple[float, bytes]] = {}  # schema → (when read, token)


def _redis():
    # The Django cache's own Redis client: a plain GET/SET, no pickling.
    return cache._cache.get_client(write=True)


def _bump():
    _redis().set(cache.make_key(GENERATION_KEY), uuid.uuid4().hex)  # make_key adds the schema
    _generations.pop(connection.schema_name, None)


def catalog_changed():
    """Call after any change to tools or servers of the current tenant."""
    _bump()
    schema = connection.schema_name

    def after_commit():
        with schema_context(schema):
            _bump()

    transaction.on_commit(after_commit)


def _generation(schema):
    now = time.monotonic()
    seen = _generations.get(schema)
    if seen is not None and now - seen[0] < REVALIDATE_SECONDS:
        return seen[1]
    client, key = _redis(), cache.make_key(GENERATION_KEY)
    token = client.get(key)
    if token is None:
        token = uuid.uuid4().hex.encode()
        client.set(key, token, nx=True)
        token = client.get(key)
    _generations[schema] = (now, token)
    return token


def cached(key: tuple, load):
    """`load()` through the cache, under the current schema and generation."""
    if connection.in_atomic_block:
        return load()
    schema = connection.schema_name
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
