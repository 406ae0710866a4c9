"""Prometheus metrics (issue 21): their definitions and the one function per event that records
them. What is read at scrape time, and the `/metrics` view, are in asixto/metrics_view.py.

Off unless ASIXTO_METRICS=1: then every function here returns at once and nothing is created,
nothing written to disk. On, the official client runs in multiprocess mode: each process (gunicorn
worker, Celery worker, a management command) writes its values to files of its own under
PROMETHEUS_MULTIPROC_DIR, and a scrape adds them up. Counters of a process that ended keep
counting in the sum (they are totals); the one live gauge (turns in flight, `livesum`) leaves it
when the process is marked dead (gunicorn's `child_exit`, Celery's shutdown signals).

Labels are the tenant's slug and the server's slug, never tool names or ids. A process gives at
most ASIXTO_METRICS_MAX_TENANTS tenants a label of their own; the next ones are counted as
`other` (and so are their servers), so a platform with thousands of tenants cannot grow a
scrape without bound.

Recording never breaks what it observes: an error in it is logged once per kind and swallowed.
"""

import functools
import logging
import os
import threading
from types import SimpleNamespace

from django.conf import settings
from django.db import connection

log = logging.getLogger(__name__)

OTHER = "other"
NONE = "none"
# Seconds: from a tool call or a model request of a few milliseconds to a turn of minutes.
FAST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
SLOW_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600)
ITERATION_BUCKETS = (1, 2, 3, 4, 5, 6, 8, 10, 15, 20)

_lock = threading.Lock()
_built: SimpleNamespace | None = None
_tenants: set[str] = set()
_children: dict[tuple, object] = {}
_failed: set[str] = set()


def enabled() -> bool:
    return settings.ASIXTO_METRICS


def multiprocess_dir() -> str:
    """Where this process writes its values (and a scrape reads everyone's)."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or settings.ASIXTO_METRICS_DIR


def _metrics() -> SimpleNamespace:
    return _built or _build()  # built once: the lock only until then


def _build() -> SimpleNamespace:
    """The metric objects, created on first use with metrics on (creating one opens its file)."""
    global _built
    with _lock:
        if _built is not None:
            return _built
        path = multiprocess_dir()
        os.makedirs(path, exist_ok=True)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
        from prometheus_client import Counter, Gauge, Histogram, values

        if not getattr(values.ValueClass, "_multiprocess", False):
            # The client chose single-process values when it was imported before the directory
            # was known: every value must go to this process's files, or the scrape cannot see it.
            values.ValueClass = values.MultiProcessValue()
        none = {"registry": None}  # never the global registry: a scrape reads the files
        _built = SimpleNamespace(
            turns_started=Counter("asixto_turns_started", "Turns started (first run).", ["tenant"], **none),
            turns=Counter("asixto_turns", "Turns finished, by final status.", ["tenant", "status"], **none),
            turn_seconds=Histogram("asixto_turn_seconds", "From a turn's start to its reply.", buckets=SLOW_BUCKETS,
                                   **none),
            turn_iterations=Histogram("asixto_turn_iterations", "Model iterations of a finished turn.",
                                      buckets=ITERATION_BUCKETS, **none),
            turn_queue_seconds=Histogram("asixto_turn_queue_seconds", "From a turn queued to its first start.",
                                         buckets=FAST_BUCKETS, **none),
            turns_in_flight=Gauge("asixto_turns_in_flight", "Turns running now in live processes.",
                                  multiprocess_mode="livesum", **none),
            model_requests=Counter("asixto_model_requests", "Chat Completions requests, by outcome (ok or error code).",
                                   ["tenant", "outcome"], **none),
            model_seconds=Histogram("asixto_model_request_seconds", "Chat Completions request time.",
                                    buckets=SLOW_BUCKETS, **none),
            model_tokens=Counter("asixto_model_tokens", "Tokens the model server reported (usage), in and out.",
                                 ["tenant", "direction"], **none),
            tool_calls=Counter("asixto_tool_calls", "Tool calls through the gateway.",
                               ["tenant", "server", "outcome", "level"], **none),
            tool_seconds=Histogram("asixto_tool_call_seconds", "Tool call time through the gateway, retries included.",
                                   buckets=FAST_BUCKETS, **none),
            tool_retries=Counter("asixto_tool_call_retries", "Attempts after the first one of tool calls.",
                                 ["tenant"], **none),
            truncations=Counter("asixto_truncations", "Tool results cut to a budget (truncation logs).",
                                ["tenant"], **none),
            syncs=Counter("asixto_syncs", "Catalog syncs, by result.", ["tenant", "result"], **none),
            sync_seconds=Histogram("asixto_sync_seconds", "Catalog sync time.", buckets=SLOW_BUCKETS, **none),
            webhook_deliveries=Counter("asixto_webhook_deliveries", "Webhook deliveries ended, by final outcome.",
                                       ["tenant", "outcome"], **none),
            webhook_attempts=Counter("asixto_webhook_attempts", "Webhook delivery attempts.", ["tenant"], **none),
        )
        return _built


def tenant_label(slug: str, *, seen: set, cap: int) -> str:
    """`slug` if it has (or may still get) a label of its own among `seen`, else `other`."""
    if slug in seen:
        return slug
    if len(seen) < cap:
        seen.add(slug)
        return slug
    return OTHER


def _tenant() -> str:
    tenant = getattr(connection, "tenant", None)
    slug = getattr(tenant, "slug", None) or connection.schema_name
    if slug in _tenants:  # the usual case, without the lock (a set's membership test is atomic)
        return slug
    with _lock:
        return tenant_label(slug, seen=_tenants, cap=settings.ASIXTO_METRICS_MAX_TENANTS)


def _labelled(metric, *labels):
    """`metric.labels(*labels)`, looked up once per label set and process: the client's own lookup
    takes a lock and checks the labels each time (P1, P3). As bounded as the label sets (the cap)."""
    child = _children.get((metric, labels))
    if child is None:
        child = _children[(metric, labels)] = metric.labels(*labels)
    return child


def _recorder(record):
    """`record(metrics, **values)` as a function that does nothing with metrics off and never raises."""

    @functools.wraps(record)
    def recorded(**values):
        if not settings.ASIXTO_METRICS:
            return
        try:
            record(_metrics(), **values)
        except Exception:
            if record.__name__ not in _failed:
                _failed.add(record.__name__)
                log.exception("metrics: recording %s failed (logged once; the operation goes on)", record.__name__)

    return recorded


@_recorder
def turn_started(m, *, first_run: bool, queued_seconds: float | None):
    """A runner claimed a turn: it is in flight until `turn_left`."""
    m.turns_in_flight.inc()
    if first_run:
        _labelled(m.turns_started, _tenant()).inc()
        if queued_seconds is not None:
            m.turn_queue_seconds.observe(max(queued_seconds, 0.0))


@_recorder
def turn_left(m):
    m.turns_in_flight.dec()


@_recorder
def turn_finished(m, *, status: str, seconds: float | None, iterations: int):
    _labelled(m.turns, _tenant(), status).inc()
    if seconds is not None:
        m.turn_seconds.observe(max(seconds, 0.0))
    m.turn_iterations.observe(iterations)


@_recorder
def model_request(m, *, outcome: str, seconds: float, tokens_in: int = 0, tokens_out: int = 0):
    tenant = _tenant()
    _labelled(m.model_requests, tenant, outcome).inc()
    m.model_seconds.observe(seconds)
    if tokens_in:
        _labelled(m.model_tokens, tenant, "in").inc(tokens_in)
    if tokens_out:
        _labelled(m.model_tokens, tenant, "out").inc(tokens_out)


@_recorder
def tool_call(m, *, server: str | None, outcome: str, level: str | None, seconds: float, attempts: int):
    tenant = _tenant()
    server = OTHER if tenant == OTHER else server or NONE  # a capped tenant's servers are capped too
    _labelled(m.tool_calls, tenant, server, outcome, level or NONE).inc()
    m.tool_seconds.observe(seconds)
    if attempts > 1:
        _labelled(m.tool_retries, tenant).inc(attempts - 1)


@_recorder
def truncated(m, *, count: int):
    if count:
        _labelled(m.truncations, _tenant()).inc(count)


@_recorder
def sync_finished(m, *, result: str, seconds: float):
    _labelled(m.syncs, _tenant(), result).inc()
    m.sync_seconds.observe(seconds)


@_recorder
def webhook_attempted(m, *, outcome: str, final: bool):
    tenant = _tenant()
    _labelled(m.webhook_attempts, tenant).inc()
    if final:
        _labelled(m.webhook_deliveries, tenant, outcome).inc()


def process_dead(pid: int | None = None, path: str | None = None) -> None:
    """Take a process's live gauges out of the sum (its counters stay): gunicorn's master calls
    this for a worker that exited, a Celery process for itself as it shuts down."""
    path = path or os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not path or not os.path.isdir(path):
        return
    try:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid or os.getpid(), path)
    except Exception:
        log.exception("metrics: marking process %s dead failed", pid)
