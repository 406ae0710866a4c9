"""The private-host approvals an outbound check needs, kept per process (M2, P1, issue 22).

Every tool call checks its server's URL again (DNS answers change), and a server on a private
network is only reachable through an operator's approval: reading the approvals from PostgreSQL
on each call cost a query per tool call of every tenant with such a server. Approvals change
rarely (an operator, through the admin, the command or the ORM), so each process keeps what it
read per (tenant, purpose), and one token in the shared cache (Redis) says when to forget it:
every saved or deleted approval replaces the token (at once, and again when the transaction
commits, so no process keeps what it read in between) and empties this process's entries. A
process reads the token at most every REVALIDATE_SECONDS, so an approval revoked in another
process stops applying here within that time; a change made in this process applies at once.

Inside a transaction the approvals are read from the database and not kept (the transaction may
see rows not committed, or roll back). Without Redis they are read from the database every time.
A queryset `update()` sends no signal: change approvals with `save()` or `delete()`, as the
admin and `private_host_approve` do."""

import threading
import time
import uuid

from django.db import transaction

CHANGES_KEY = "asixto:private-hosts-changes"
REVALIDATE_SECONDS = 0.25
_MAX_ENTRIES = 10000

_entries: dict[tuple, object] = {}  # (schema, purpose, tenant slug) → OutboundPolicy, read under _token
_token: bytes | None = None
_read_at = 0.0
_lock = threading.Lock()


def _redis():
    from django.core.cache import cache

    return cache._cache.get_client(write=True)


def cached_policy(*, schema: str, key: tuple, load):
    """`load()` (the OutboundPolicy for `key`) through this process's entries, unless inside a
    transaction or without Redis."""
    from django.db import connection

    if connection.in_atomic_block:
        return load()
    try:
        token = _current_token()
    except Exception:  # no shared cache: nothing can say when to forget, so keep nothing
        return load()
    entry_key = (schema, *key)
    found = _entries.get(entry_key)
    if found is not None and found[0] == token:
        return found[1]
    policy = load()
    if len(_entries) >= _MAX_ENTRIES:
        _entries.clear()
    _entries[entry_key] = (token, policy)
    return policy


def _current_token() -> bytes:
    global _token, _read_at
    if _token is not None and time.monotonic() - _read_at < REVALIDATE_SECONDS:
        return _token
    with _lock:
        read_at = time.monotonic()
        client = _redis()
        token = client.get(CHANGES_KEY)
        if token is None:  # never changed yet, or Redis lost it: a token is given (the first writer wins)
            client.set(CHANGES_KEY, uuid.uuid4().hex, nx=True)
            token = client.get(CHANGES_KEY)
        if token != _token:
            _entries.clear()
        _token, _read_at = token, read_at
        return token


def approvals_changed(**_signal):
    """After any approval is saved or deleted (connected to the model's signals in TenantsConfig)."""
    _replace_token()
    transaction.on_commit(_replace_token)


def _replace_token():
    global _token
    _entries.clear()
    _token = None
    try:
        _redis().set(CHANGES_KEY, uuid.uuid4().hex)
    except Exception:  # no shared cache: no process keeps approvals then (cached_policy)
        pass
