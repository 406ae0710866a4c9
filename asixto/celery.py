"""The Celery app. tenant-schemas-celery stamps each task with the schema it was sent from, and
the worker runs it in that schema (T1), or not at all: a task whose tenant cannot be read is sent
again later (`Task`), never run in another schema.

Call records (G9) are stored by a writer thread in each process. A prefork child leaves through
`os._exit`, which skips `atexit`, so the worker flushes them itself: at the end of every task
and when a child process shuts down. Its live stdio MCP sessions (tools/mcp/stdio_pool.py) are
closed then too, each child stopped and reaped.

A worker loads what turns need before it takes its first task (`worker_init`, before a prefork
pool forks): the language detector's model costs more than half a second of CPU, which the
first turns would otherwise pay (P3, P4). A worker that is ready records the tool calls a killed
process of its host left unrecorded (tools/gateway/journal.py).

Every message carries the time it was sent (`SENT_AT_HEADER`, the sender's clock): the periodic
sweep of stalled turns reads from its own message which turns the queue has already handed out
(runtime/tasks.py, `requeue_stalled_turns`).

Log lines (issue 21): a task's lines carry its tenant and the trace id of the request that
queued it (a message header); with ASIXTO_LOG_FORMAT=json the worker and beat log through the
project's LOGGING (one JSON object a line) instead of Celery's own text format.

Traces (asixto/tracing.py) start in the worker process too, when configured: the Celery
instrumentation continues the API request's trace from the task's message headers.

Every process of the project imports this module (asixto/__init__.py), so this is where a
process makes itself non-dumpable (asixto/process.py): stdio MCP servers must not read it. It is
also where a process asks numpy's BLAS for one thread, before anything loads numpy."""

import logging
import os
import time
from datetime import UTC, datetime

from celery.signals import (
    before_task_publish,
    setup_logging,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
)
from tenant_schemas_celery.app import CeleryApp, get_schema_name_from_task
from tenant_schemas_celery.task import TenantTask

from asixto import log_context
from asixto.process import make_non_dumpable

make_non_dumpable()

# Numpy's OpenBLAS starts a thread per core and keeps them spinning after each product. The routing
# encoders' products are small and run on many turns' threads at once (runtime/routing/encoder.py
# asks for one BLAS thread through threadpoolctl, which is not installed): with the extra threads the
# routing check took twice the CPU, taken from the web server and PostgreSQL (P4, issue 22).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "asixto.settings")


class Task(TenantTask):
    """tenant-schemas-celery switches a task to its tenant's schema in a `task_prerun` handler that
    reads the tenant's row, and Celery only logs a handler's error: with PostgreSQL unreachable just
    then, the task ran on in the public schema (issue 19, tests/runtime/test_worker_database_down.py).
    The switch is made sure of here, where an error is the task's: the row read again, and on a
    database error the task sent again after ASIXTO_TURN_RETRY_SECONDS (at most
    ASIXTO_TURN_TRANSIENT_RUNS times; the sweeps do the rest)."""

    abstract = True

    def __call__(self, *args, **kwargs):
        from django.conf import settings
        from django.db import InterfaceError, OperationalError, connections

        schema = get_schema_name_from_task(self, kwargs)
        databases = self.get_tenant_databases()
        if schema and any(connections[name].schema_name != schema for name in databases):
            try:
                tenant = self.get_tenant_for_schema(schema_name=schema)
            except (OperationalError, InterfaceError) as exc:
                for name in databases:
                    connections[name].close()  # a broken connection is not reused
                raise self.retry(exc=exc, countdown=settings.ASIXTO_TURN_RETRY_SECONDS,
                                 max_retries=settings.ASIXTO_TURN_TRANSIENT_RUNS) from exc
            for name in databases:
                connections[name].set_tenant(tenant, include_public=True)
        return super().__call__(*args, **kwargs)


app = CeleryApp("asixto", task_cls=Task)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@before_task_publish.connect(dispatch_uid="asixto-trace-header")
def _carry_trace(headers=None, **_kwargs):
    trace = log_context.trace_id.get()
    if headers is not None and trace and log_context.TRACE_HEADER not in headers:
        headers[log_context.TRACE_HEADER] = trace


SENT_AT_HEADER = "asixto_sent_at"


@before_task_publish.connect(dispatch_uid="asixto-sent-at-header")
def _stamp_sent_at(headers=None, **_kwargs):
    if headers is not None:
        headers[SENT_AT_HEADER] = time.time()  # this sending's, also when a retry copies the headers


def sent_at(request) -> datetime | None:
    """When the message of the task running with `request` was sent (None: a message of a sender
    that stamps none)."""
    stamp = (request.headers or {}).get(SENT_AT_HEADER) or request.get(SENT_AT_HEADER)
    return datetime.fromtimestamp(stamp, UTC) if isinstance(stamp, int | float) else None


@task_prerun.connect(dispatch_uid="asixto-task-log-context")
def _task_log_context(task=None, kwargs=None, **_kwargs):
    trace = (task.request.headers or {}).get(log_context.TRACE_HEADER) or task.request.get(log_context.TRACE_HEADER)
    log_context.task_started(schema_name=get_schema_name_from_task(task, kwargs), trace=trace)


def _project_logging(loglevel=None, **_kwargs):
    """Celery configures no logging of its own: the project's LOGGING (JSON lines) applies, at the
    level given on the command line (`--loglevel`) when there is one."""
    import logging

    from django.conf import settings

    from asixto.logs import configure

    configure(settings.LOGGING)
    if loglevel:
        logging.getLogger().setLevel(loglevel)


if os.environ.get("ASIXTO_LOG_FORMAT", "").strip().lower() == "json":
    setup_logging.connect(_project_logging, dispatch_uid="asixto-json-logs", weak=False)


@worker_init.connect(dispatch_uid="asixto-preload")
def _preload(**_kwargs):
    from runtime.routing.language import preload

    preload()


@worker_ready.connect(dispatch_uid="asixto-recover-interrupted-calls")
def _recover_interrupted_calls(**_kwargs):
    # A worker started after one was killed on this host records the calls that one left unrecorded.
    from tools.gateway import journal

    try:
        journal.recover()
    except Exception:  # the periodic task tries again; a worker must start whatever happened
        logging.getLogger(__name__).exception("could not recover interrupted calls")


@worker_init.connect(dispatch_uid="asixto-tracing")
@worker_process_init.connect(dispatch_uid="asixto-tracing-child")
def _tracing(**_kwargs):
    # Once per worker process (threads pool: at worker_init; prefork: again in each child, a no-op
    # there after the parent's); off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (asixto/tracing.py).
    from asixto import tracing

    tracing.setup(service="asixto-worker")


@worker_process_shutdown.connect(dispatch_uid="asixto-tracing-flush-child")
@worker_shutdown.connect(dispatch_uid="asixto-tracing-flush")
def _tracing_flush(**_kwargs):
    # A prefork child leaves through os._exit: the spans still batched are sent now.
    from asixto import tracing

    tracing.flush()


@task_postrun.connect(dispatch_uid="asixto-store-call-records")
def _store_call_records(**_kwargs):
    from tools.gateway import records

    records.flush()


@worker_process_shutdown.connect(dispatch_uid="asixto-stop-call-records-child")
@worker_shutdown.connect(dispatch_uid="asixto-stop-call-records")
def _stop_call_records(**_kwargs):
    from tools.gateway import records
    from tools.mcp import stdio_pool

    stdio_pool.shutdown()
    records.shutdown()


@worker_process_shutdown.connect(dispatch_uid="asixto-metrics-process-dead-child")
@worker_shutdown.connect(dispatch_uid="asixto-metrics-process-dead")
def _metrics_process_dead(**_kwargs):
    # This process's live gauges (turns in flight) leave the sum (asixto/metrics.py).
    from asixto import metrics

    metrics.process_dead()
