"""Writing call records (G9) off the call's critical path.

A call record is built in full by the gateway, then handed to a writer thread that inserts
records in batches (one INSERT per schema and batch, on the thread's own connection). The
caller does not wait for PostgreSQL's commit, which cost as much as a third of a bare tool
call (P1). `flush()` waits until everything handed over is stored: the test console, the end
of a turn and process exit call it. Inside a transaction the record is written at once, in
that transaction, so it commits or rolls back with the caller's work."""

import atexit
import logging
import queue
import threading
import time

from django.db import close_old_connections, connection, transaction
from django_tenants.utils import schema_context

from tools.models import ToolCall

log = logging.getLogger(__name__)
BATCH = 500
LINGER_SECONDS = 0.05
_queue: "queue.Queue[tuple[str, dict]]" = queue.Queue()
_thread: threading.Thread | None = None
_start_lock = threading.Lock()


def submit(values: dict):
    """Store one call record; `values` are ToolCall field values by attribute name, `id` included."""
    if connection.in_atomic_block:
        ToolCall(**values).save(force_insert=True)
        return
    _ensure_writer()
    _queue.put((connection.schema_name, values))


def flush():
    """Block until every submitted record is stored."""
    if _thread is not None:
        _queue.join()


_STOP = ("", None)


def shutdown():
    """Store what is pending, then stop the writer and close its database connection."""
    global _thread
    if _thread is not None and _thread.is_alive():
        _queue.put(_STOP)
        _thread.join(10)
    _thread = None


def _ensure_writer():
    global _thread
    if _thread is not None and _thread.is_alive():
        return
    with _start_lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run, name="asixto-call-records", daemon=True)
            _thread.start()


def _run():
    while True:
        first = _queue.get()
        if first is _STOP:
            connection.close()
            _queue.task_done()
            return
        batch = [first]
        # Linger a little to gather more: one commit per batch instead of one per call keeps the
        # database's and this thread's work out of the way of the calls themselves.
        deadline = time.monotonic() + LINGER_SECONDS
        while len(batch) < BATCH:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                item = _queue.get(timeout=remaining)
            except queue.Empty:
                break
            if item is _STOP:
                _queue.put(item)  # handled once this batch is stored
                _queue.task_done()
                break
            batch.append(item)
        try:
            _store(batch)
        finally:
            for _item in batch:
                _queue.task_done()


def _store(batch):
    by_schema: dict[str, list[dict]] = {}
    for schema, record in batch:
        by_schema.setdefault(schema, []).append(record)
    for schema, records in by_schema.items():
        for attempt in (1, 2):
            try:
                with schema_context(schema):
                    _insert(records)
                break
            except Exception:
                # A dropped database connection: start a fresh one and try once more.
                close_old_connections()
                connection.close()
                if attempt == 2:
                    log.exception("could not store %d call records of schema %s", len(records), schema)


def _insert(records):
    """One prepared INSERT for the batch, in one transaction: the ORM's bulk_create costs more
    CPU than the database does here, and this thread shares the interpreter with the calls."""
    fields = ToolCall._meta.concrete_fields
    quote = connection.ops.quote_name
    sql = (
        f"INSERT INTO {quote(ToolCall._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))})"
    )
    defaults = {field.attname: field.get_default() for field in fields}
    rows = [
        [field.get_db_prep_save(record.get(field.attname, defaults[field.attname]), connection) for field in fields]
        for record in records
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(sql, rows)


atexit.register(shutdown)
