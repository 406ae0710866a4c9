"""Keeps the leases of the turns this process is running alive while they wait (issue 19).

A turn's lease is renewed by its own writes (runtime/turn.py), but a turn can wait minutes on a
model or a tool without writing. Without this, the lease had to outlast the longest wait (15
minutes), and a killed worker's turns waited that long before another worker took them. Here one
thread per process renews, every ASIXTO_TURN_LEASE_RENEW_SECONDS, the leases of every turn this
process holds, in one statement per tenant schema; the lease itself can then be short
(ASIXTO_TURN_LEASE_SECONDS, 40 s, renewed every 12 s), and a killed worker's turns are taken over within a minute
later (`requeue_stalled_turns`). Rows another transaction holds are skipped, never waited on, and
the thread gives its database connection back after each round. A runner whose lease ran out
anyway (the database was unreachable for longer than a lease) finds out at its next write
(LeaseLost): two runners never both store a turn.
"""

import logging
import os
import threading
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

log = logging.getLogger(__name__)
_lock = threading.Lock()
_held: dict[tuple[str, str], str] = {}  # (schema, turn id) → runner
_thread: threading.Thread | None = None


def hold(schema: str, turn_id, runner: str) -> None:
    """This process runs `turn_id` as `runner` from now on: keep its lease alive."""
    global _thread
    if not settings.ASIXTO_TURN_LEASE_RENEW_SECONDS:
        return
    with _lock:
        _held[(schema, str(turn_id))] = runner
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_loop, name="lease-keeper", daemon=True)
            _thread.start()


def release(schema: str, turn_id) -> None:
    with _lock:
        _held.pop((schema, str(turn_id)), None)


def renew_now() -> int:
    """One round: renew every held lease; returns how many turns it renewed."""
    with _lock:
        held = dict(_held)
    by_schema: dict[str, list[tuple[str, str]]] = {}
    for (schema, turn_id), runner in held.items():
        by_schema.setdefault(schema, []).append((turn_id, runner))
    until = timezone.now() + timedelta(seconds=settings.ASIXTO_TURN_LEASE_SECONDS)
    renewed = 0
    try:
        with connection.cursor() as cursor:
            for schema, pairs in by_schema.items():
                table = connection.ops.quote_name(schema) + ".runtime_turn"
                rows = ", ".join(["(%s::uuid, %s)"] * len(pairs))
                cursor.execute(
                    f"UPDATE {table} SET lease_expires_at = %s WHERE id IN (SELECT id FROM {table} "
                    f"WHERE status = 'running' AND (id, runner) IN ({rows}) FOR UPDATE SKIP LOCKED)",
                    [until, *[value for pair in pairs for value in pair]])
                renewed += cursor.rowcount
    except DatabaseError as exc:
        log.warning("turn leases not renewed this round: %s", exc)
    finally:
        connection.close()
    return renewed


def _loop():
    global _thread
    while True:
        interval = settings.ASIXTO_TURN_LEASE_RENEW_SECONDS
        if not interval:  # turned off: the thread ends (a later `hold` starts another if it is on again)
            with _lock:
                _thread = None
            return
        threading.Event().wait(interval)
        with _lock:
            if not _held:
                continue
        renew_now()


def _forget_after_fork():
    global _thread
    _held.clear()
    _thread = None


os.register_at_fork(after_in_child=_forget_after_fork)
