"""The Celery app. tenant-schemas-celery stamps each task with the schema it was sent from, and
the worker runs it in that schema (T1).

Call records (G9) are stored by a writer thread in each process. A prefork child leaves through
`os._exit`, which skips `atexit`, so the worker flushes them itself: at the end of every task
and when a child process shuts down. Its live stdio MCP sessions (tools/mcp/stdio_pool.py) are
closed then too, each child stopped and reaped.

A worker loads what turns need before it takes its first task (`worker_init`, before a prefork
pool forks): the language detector's model costs more than half a second of CPU, which the
first turns would otherwise pay (P3, P4).

Traces (asixto/tracing.py) start in the worker process too, when configured: the Celery
instrumentation continues the API request's trace from the task's message headers.

Every process of the project imports this module (asixto/__init__.py), so this is where a
process makes itself non-dumpable (asixto/process.py): stdio MCP servers must not read it."""

import os

from celery.signals import task_postrun, worker_init, worker_process_init, worker_process_shutdown, worker_shutdown
from tenant_schemas_celery.app import CeleryApp

from asixto.process import make_non_dumpable

make_non_dumpable()

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "asixto.settings")

app = CeleryApp("asixto")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect(dispatch_uid="asixto-preload")
def _preload(**_kwargs):
    from runtime.routing.language import preload

    preload()


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
