"""Writing call records (G9) off the call's critical path, so that none is ever lost.

A call record is built in full by the gateway, then handed to a writer thread that stores
records in batches (COPY) on its own database connection: the caller does not wait for PostgreSQL's
commit, which cost as much as a third of a bare tool call (P1). A record is never written in
the caller's transaction, so it survives the caller's rollback; a caller inside a transaction
waits until its record is stored (its next query then sees it).

Every record is made storable before it is written (storable.py). If a batch still fails, its records are
stored one by one, so one bad record never costs its neighbours. While the database cannot be
reached at all, the batch is kept and tried again (waits growing to OUTAGE_MAX_WAIT_SECONDS)
until it answers: an outage delays records, it does not lose them (issue 19).

A caller that needs its record stored when the call returns (the test console, which answers
with the record's id) stores it itself on its own connection, in one round trip
(`submit(at_once=True)`), unless it is inside a transaction.

`flush()` stores what is pending at once (no batch window) and returns when it is stored: the
end of a Celery task, of a turn and process exit call it. A Celery prefork child exits
through `os._exit`, where `atexit` never runs: asixto/celery.py flushes on the worker's own
signals (`task_postrun`, `worker_process_shutdown`)."""

import atexit
import itertools
import logging
import os
import queue
import threading
import time
import weakref

from django.db import DEFAULT_DB_ALIAS, DatabaseError, InterfaceError, OperationalError, connection, connections, transaction

from tools.gateway import journal
from tools.gateway.storable import (  # noqa: F401 (the record's values, as callers and tests name them)
    FIELDS,
    MAX_TEXT_CHARS,
    EncodedJson,
    encoded_json,
    storable_json,
    storable_row,
    storable_text,
)
from tools.models import ToolCall

log = logging.getLogger(__name__)
BATCH = 500
FEW_ROWS = 10  # a batch of one schema up to this size is one INSERT, a larger one a COPY
LINGER_SECONDS = 0.05
# A caller inside a transaction waits this long at most for its record (the writer is stuck
# only if PostgreSQL is): the call itself must not hang on its record.
IN_TRANSACTION_WAIT_SECONDS = 10.0
FLUSH_WAIT_SECONDS = 60.0
IDLE_SECONDS = 5.0  # the writer keeps its database connection this long after the last record
# While the database cannot be reached, the writer waits this long between tries, doubling from the first.
OUTAGE_FIRST_WAIT_SECONDS, OUTAGE_MAX_WAIT_SECONDS = 0.5, 5.0


class _Flush:
    """A marker in the queue: everything before it is stored once `done` is set."""

    __slots__ = ("done",)

    def __init__(self):
        self.done = threading.Event()


_STOP = object()
_queue: "queue.SimpleQueue" = queue.SimpleQueue()
# Set by flush() and shutdown(): ends the writer's batch window at once. Submitting a record
# does not wake the writer (a thread switch per call costs the calls more than the batch saves).
_urgent = threading.Event()
_thread: threading.Thread | None = None
_start_lock = threading.Lock()


def submit(values: dict, *, at_once: bool = False):
    """Store one call record; `values` are ToolCall field values by attribute name, `id` included.
    `at_once`: stored when this returns (the test console answers with the record's id)."""
    db = connections[DEFAULT_DB_ALIAS]  # the caller's own connection, looked up once
    if at_once and not db.in_atomic_block and _stored_here(db, values):
        return
    _ensure_writer()
    _queue.put((db.schema_name, values))
    if db.in_atomic_block or at_once:
        # Not in the caller's transaction (it may roll back): on the writer's connection, now,
        # so the caller's next query sees the record.
        flush(timeout=IN_TRANSACTION_WAIT_SECONDS)


def _stored_here(db, values: dict) -> bool:
    """One record stored on the caller's own connection (in autocommit) in one round trip: a
    caller that waits for its record would otherwise wait for two hand-overs to the writer
    thread and its transaction (most of the test console's time beyond the call itself, P1).
    False if that failed: the writer then stores it, with its retries."""
    try:
        row = storable_row(values)
        db.ensure_connection()
        if not db.get_autocommit():
            return False
        # The psycopg connection itself: the statement sets its schema for itself, so the
        # search_path that Django's cursor would set first is not needed.
        with db.connection.cursor() as cursor:
            cursor.execute(_few_rows_sql(1), [db.schema_name, *row])
    except Exception as exc:  # a database error, a bug in the cleaning: the writer has the last word
        log.warning("a call record was left to the writer (%s: %s)", type(exc).__name__, exc)
        return False
    journal.stored([values["id"]])
    return True


def flush(timeout: float | None = FLUSH_WAIT_SECONDS) -> bool:
    """Store everything submitted so far, now, and wait until it is stored (at most `timeout`
    seconds). Returns whether it was stored in time."""
    if _thread is None or not _thread.is_alive():
        return True
    marker = _Flush()
    _queue.put(marker)
    _urgent.set()
    return marker.done.wait(timeout)


def shutdown():
    """Store what is pending, then stop the writer and close its database connection."""
    global _thread
    thread = _thread
    if thread is not None and thread.is_alive():
        _queue.put(_STOP)
        _urgent.set()
        thread.join(FLUSH_WAIT_SECONDS)
    _thread = None


def _ensure_writer():
    global _thread
    if _thread is not None and _thread.is_alive():
        return
    with _start_lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run, name="asixto-call-records", daemon=True)
            _thread.start()


def _forget_writer_after_fork():
    # A forked child (a Celery prefork child, a gunicorn worker) has no writer thread and may
    # have copied the queue while another thread held its lock: start afresh.
    global _queue, _urgent, _thread, _start_lock
    _queue, _urgent, _thread, _start_lock = queue.SimpleQueue(), threading.Event(), None, threading.Lock()
    _prepared.clear()  # the child's writer opens sessions of its own


os.register_at_fork(after_in_child=_forget_writer_after_fork)


def _run():
    try:
        while True:
            try:
                item = _queue.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                # Idle: give the database connection back (to the pool) until records come.
                connection.close()
                item = _queue.get()
            batch, markers = [], []
            stop = _take(item, batch, markers)
            if not (markers or stop):
                # Linger a little to gather more: one commit per batch instead of one per call
                # keeps the database's and this thread's work out of the way of the calls. A
                # flush or a stop ends the wait at once.
                _urgent.wait(LINGER_SECONDS)
            _urgent.clear()
            while not stop and len(batch) < BATCH:
                try:
                    item = _queue.get_nowait()
                except queue.Empty:
                    break
                stop = _take(item, batch, markers)
            if batch:
                _store(batch)
            for marker in markers:
                marker.done.set()
            if stop:
                return
    finally:
        connection.close()


def _take(item, batch, markers) -> bool:
    """Sort one queue item into the batch or the markers; True for the stop sign."""
    if item is _STOP:
        return True
    if isinstance(item, _Flush):
        markers.append(item)
    else:
        batch.append(item)
    return False


# ---------------------------------------------------------------- storing


def _store(batch):
    """All records of the batch in one transaction; if that fails, each record on its own; while the
    database cannot be reached, the batch waits for it."""
    rows = []
    for schema, record in batch:
        try:
            rows.append((schema, storable_row(record)))
        except Exception:  # a bug in the cleaning must not cost the other records
            log.exception("could not prepare a call record of schema %s", schema)
    while True:
        failure = _insert_failure(rows)
        if failure is None:
            break
        if not isinstance(failure, (OperationalError, InterfaceError)) or _reachable():
            log.warning("a batch of %d call records failed (%s); storing them one by one", len(rows), failure)
            _insert_one_by_one(rows)
            break
        _wait_for_the_database(len(rows), failure)
    # Stored (or, for a record PostgreSQL refuses whatever is done, logged): none is left to recover.
    journal.stored(record["id"] for _schema, record in batch)


def _insert_failure(rows) -> Exception | None:
    """Inserts the batch (twice at most); None when stored, else the error of the last try."""
    for _attempt in (1, 2):
        try:
            _insert(rows)
            return None
        except (OperationalError, InterfaceError) as exc:
            # A dropped database connection: start a fresh one and try once more.
            connection.close()
            failure = exc
        except DatabaseError as exc:
            failure = exc
            if not _forget_prepared():
                break
            # The session may have lost a statement prepared on it: once more, preparing afresh.
    return failure


def _reachable() -> bool:
    """Whether a fresh connection to the database can be had (False: an outage, not a bad record)."""
    try:
        connection.ensure_connection()
        return True
    except (OperationalError, InterfaceError):
        connection.close()
        return False


def _wait_for_the_database(count: int, failure: Exception):
    """Until the database answers again. Calls never wait for this thread (their records queue up
    meanwhile); a flush waits at most its own timeout."""
    log.error("the database cannot be reached (%s): %d call records kept until it answers", failure, count)
    wait = OUTAGE_FIRST_WAIT_SECONDS
    while not _reachable():
        time.sleep(wait)
        wait = min(wait * 2, OUTAGE_MAX_WAIT_SECONDS)
    log.warning("the database answers again: storing the %d call records kept during the outage", count)


def _insert(rows):
    """The batch in one transaction, by COPY: a third of the CPU of an INSERT per row, and this
    thread shares the interpreter with the calls. Records of one tenant go straight to its
    table. Records of several tenants are copied once into a temporary table of the writer's
    session, then moved to each tenant's table by INSERT … SELECT, all in one round trip: a
    COPY per tenant costs three times the CPU."""
    schemas = list(dict.fromkeys(schema for schema, _row in rows))
    if len(schemas) == 1 and len(rows) <= FEW_ROWS:
        # One round trip (no BEGIN, COPY and COMMIT of their own): what a flush after a few
        # calls waits for (a turn's one or two calls).
        with connection.cursor() as cursor, connection.wrap_database_errors:
            cursor.execute(_few_rows_sql(len(rows)), [schemas[0], *(value for _schema, row in rows for value in row)])
        return
    with transaction.atomic(), connection.cursor() as cursor, connection.wrap_database_errors:
        if len(schemas) == 1:
            cursor.execute(_NO_FSYNC_WAIT)
            with cursor.cursor.copy(_copy_sql(schemas[0])) as copy:
                for _schema, row in rows:
                    copy.write_row(row)
            return
        moves, preparing = _moves(schemas)
        cursor.execute("; ".join([_NO_FSYNC_WAIT, _STAGING_TABLE, *preparing]))
        with cursor.cursor.copy(_STAGING_COPY) as copy:
            for schema, row in rows:
                copy.write_row([schema, *row])
        cursor.execute("; ".join(moves))


# The move of each tenant's records out of the staging table is prepared once per writer
# session and schema: parsing and planning an INSERT … SELECT per tenant was most of
# PostgreSQL's work for a batch of many tenants' records (P1). Session → schema → name; a new
# session (a new connection) starts with none. Past MAX_PREPARED schemas in one session, the
# other schemas' moves are sent as plain statements (the session's memory stays bounded).
MAX_PREPARED = 1000
_prepared: "weakref.WeakKeyDictionary[object, dict[str, str]]" = weakref.WeakKeyDictionary()
# Names are never reused: a statement of a forgotten batch may still exist in its session.
_statement_numbers = itertools.count()


def _moves(schemas) -> tuple[list[str], list[str]]:
    """(the statements that move each schema's records, the PREPAREs they need first)."""
    names = _prepared.setdefault(connection.connection, {})
    moves, preparing = [], []
    for schema in schemas:
        name = names.get(schema)
        if name is None and len(names) < MAX_PREPARED:
            name = names[schema] = f"asixto_move_records_{next(_statement_numbers)}"
            preparing.append(f"PREPARE {name} AS {_move_sql(schema)}")
        moves.append(f"EXECUTE {name}" if name is not None else _move_sql(schema))
    return moves, preparing


def _forget_prepared() -> bool:
    """Forget what this session prepared (after a failed batch); whether there was any."""
    session = connection.connection
    return session is not None and bool(_prepared.pop(session, None))


def _insert_one_by_one(rows):
    connection.close()
    stored = 0
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_NO_FSYNC_WAIT)
            for schema, row in rows:
                try:
                    with transaction.atomic():
                        cursor.execute(_insert_sql(schema), row)
                    stored += 1
                except DatabaseError as exc:
                    log.error("could not store call record %s of schema %s: %s", row[0], schema, exc)
    except DatabaseError:
        log.exception("could not store %d call records", len(rows) - stored)
        connection.close()


# The writer's commits do not wait for the WAL to reach the disk (3–4 ms of a 25-record batch
# here, and what a flush() waits for). A record committed so survives any crash of ours and is
# visible at once; only a crash of PostgreSQL itself within ~0.6 s (3 × wal_writer_delay) of
# the commit could lose it, never corrupt anything. Calls themselves never wait for records.
_NO_FSYNC_WAIT = "SET LOCAL synchronous_commit TO OFF"
_FIELDS = FIELDS
_COLUMNS = ", ".join(connection.ops.quote_name(field.column) for field in _FIELDS)
_PLACEHOLDERS = ", ".join(["%s"] * len(_FIELDS))
_sql_by_schema: dict[tuple[str, str], str] = {}


# Lives as long as the writer's session; emptied by every commit.
_STAGING_TABLE = (
    "CREATE TEMPORARY TABLE IF NOT EXISTS asixto_call_records (schema_name text, "
    + ", ".join(f"{connection.ops.quote_name(field.column)} {field.db_type(connection)}" for field in _FIELDS)
    + ") ON COMMIT DELETE ROWS"
)
_STAGING_COPY = f"COPY pg_temp.asixto_call_records (schema_name, {_COLUMNS}) FROM STDIN"


def _move_sql(schema):
    literal = "'" + schema.replace("'", "''") + "'"
    return _statement(
        "INSERT INTO {table} ({columns}) SELECT {columns} FROM pg_temp.asixto_call_records WHERE schema_name = "
        + literal.replace("{", "{{").replace("}", "}}"),
        schema,
    )


def _insert_sql(schema):
    return _statement("INSERT INTO {table} ({columns}) VALUES ({placeholders})", schema)


def _few_rows_sql(count):
    """INSERT of `count` rows into the call records of the schema given as the first value,
    without waiting for the disk (see _NO_FSYNC_WAIT): sent as one query in autocommit,
    PostgreSQL runs the statements as one (implicit) transaction, to which SET LOCAL holds.

    One text for every tenant, the schema a value: psycopg parses a query's placeholders once
    per text and keeps the last 128 texts it parsed, so with a text per schema a worker serving
    more tenants than that parsed the statement again for every record (P1, issue 22). PostgreSQL
    takes the value as one schema name whatever it holds (a comma too), and the table is looked
    up there only (pg_temp after it)."""
    sql = _few_rows_by_count.get(count)
    if sql is None:
        rows = ", ".join([f"({_PLACEHOLDERS})"] * count)
        table = connection.ops.quote_name(ToolCall._meta.db_table)
        sql = _few_rows_by_count[count] = (
            f"{_NO_FSYNC_WAIT}; SET LOCAL search_path TO %s, pg_temp; INSERT INTO {table} ({_COLUMNS}) VALUES {rows}"
        )
    return sql


_few_rows_by_count: dict[int, str] = {}


def _copy_sql(schema):
    return _statement("COPY {table} ({columns}) FROM STDIN", schema)


def _statement(template, schema):
    # Schema-qualified: no search_path switch per tenant, all tenants in one transaction.
    sql = _sql_by_schema.get((template, schema))
    if sql is None:
        quote = connection.ops.quote_name
        table = f"{quote(schema)}.{quote(ToolCall._meta.db_table)}"
        sql = template.format(table=table, columns=_COLUMNS, placeholders=_PLACEHOLDERS)
        if len(_sql_by_schema) > 10000:
            _sql_by_schema.clear()
        _sql_by_schema[(template, schema)] = sql
    return sql


atexit.register(shutdown)
