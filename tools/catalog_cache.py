"""A per-process cache of the tools the gateway looks up, kept honest by a catalog generation.

Every call looks its tool up; the ORM query for that (tool + server) costs about a millisecond,
most of a bare tool call (P1). Each tenant has a generation token in the shared cache (Redis,
keyed by schema); anything that changes a tool or a server replaces it — at once, and again
when the transaction commits, so no process keeps what it read in between. A process re-reads
the tokens at most every REVALIDATE_SECONDS, so a change made elsewhere (an admin disabling a
tool) reaches every worker within that time; a change made in this process applies at once.
A change also replaces one platform-wide change token, in the same atomic write (MSET). A
revalidation reads that token with the calling tenant's own (one round trip of two keys), and only
when the change token moved re-reads the tokens of every tenant the process knows (one MGET): a
worker serving hundreds of tenants pays neither one Redis request per call nor a read of every
tenant's token every REVALIDATE_SECONDS while nothing changes (P1, issue 22).
Lookups inside a transaction never use or fill the cache: they may see uncommitted rows."""

import os
import threading
import time
import uuid

from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django_tenants.utils import schema_context

from tools.bounded import BoundedDict

GENERATION_KEY = "asixto:catalog-generation:{schema}"
CHANGES_KEY = "asixto:catalog-changes"  # replaced with any tenant's generation
REVALIDATE_SECONDS = 0.25
_MAX_ENTRIES = 10000
_entries: BoundedDict = BoundedDict(_MAX_ENTRIES)  # (schema, …) → (generation, value)
_generations: dict[str, bytes] = {}  # schema → token, as read at _read_at
_changes: bytes | None = None  # CHANGES_KEY as read before the tokens in _generations
_read_at = 0.0
_lock = threading.Lock()


def _redis():
    # The Django cache's own Redis client: a plain GET/SET, no pickling.
    return cache._cache.get_client(write=True)


def _key(schema):
    return GENERATION_KEY.format(schema=schema)


def _bump():
    schema = connection.schema_name
    # Both at once: whoever reads the new change token reads the new generation with it or after.
    token = uuid.uuid4().hex
    _redis().mset({_key(schema): token, CHANGES_KEY: token})
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
    return _revalidate(schema)


def _revalidate(schema):
    """`schema`'s token, the other known tenants' kept or read again: again only when the change
    token moved since they were read (each change writes a fresh one). One thread at a time, so
    that tokens read before a change never replace those read after it."""
    global _read_at, _changes
    with _lock:
        read_at = time.monotonic()
        if len(_generations) >= _MAX_ENTRIES:
            _generations.clear()
        client = _redis()
        changes, token = client.mget([CHANGES_KEY, _key(schema)])
        # Nothing changed yet, or Redis lost its keys: a token is given (the first writer wins).
        changes = changes if changes is not None else _initial(client, CHANGES_KEY)
        token = token if token is not None else _initial(client, _key(schema))
        if changes != _changes:
            others = [name for name in _generations if name != schema]
            tokens = client.mget([_key(name) for name in others]) if others else []
            _generations.clear()
            for name, value in zip(others, tokens, strict=True):
                _generations[name] = value if value is not None else _initial(client, _key(name))
            _changes = changes
        _generations[schema] = token
        _read_at = read_at
        return token


def _initial(client, key):
    client.set(key, uuid.uuid4().hex, nx=True)
    return client.get(key)


def _new_lock_after_fork():
    # A forked child (a Celery prefork child) may have copied the lock while a thread held it.
    global _lock
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_after_fork)


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
    _entries[entry_key] = (generation, value)
    return value
