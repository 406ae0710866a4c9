"""`/metrics` on the platform's own domain (issue 21): what every process recorded
(asixto/metrics.py, read from the multiprocess files), and what is read at scrape time:

- `asixto_up{dependency="postgres"|"redis"}`: 1 if it answered, 0 if not, within about a second
  (both are checked at once, each on a thread of its own, on connections of their own);
- `asixto_queue_depth{queue}`: messages waiting in Celery's Redis lists (priority lists included);
- `asixto_tools{verdict}`: live catalog tools of every tenant by certification verdict, read
  with the PostgreSQL check in one statement.

404 unless ASIXTO_METRICS is on; with ASIXTO_METRICS_TOKEN set, 401 without
`Authorization: Bearer <token>` (compared in constant time). A tenant's domain has no such URL
(asixto/urls.py), so it answers 404 there too.

On the platform's own hosts the view is reached before tenant resolution (`MetricsMiddleware`),
which reads the database: while PostgreSQL is down the scrape still answers, and says so."""

import hmac
import logging
import os
import threading
import time

from django.conf import settings
from django.db import connection
from django.http import Http404, HttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from asixto.health import on_platform_host

log = logging.getLogger(__name__)

CHECK_SECONDS = 1.0
# kombu's Redis transport keeps a queue's messages of priority p > 0 in a list of its own.
PRIORITY_SUFFIXES = ("", "\x06\x163", "\x06\x166", "\x06\x169")


def _postgres(params: dict) -> dict:
    """Whether PostgreSQL answers, and the live tools of every tenant by verdict."""
    import psycopg
    from psycopg import sql

    from tenants.models import Tenant
    from tools.models import Tool

    # Django's connection parameters, without its cursor class and adapters (plain values here).
    params = {name: value for name, value in params.items() if name not in ("cursor_factory", "context")}
    params["options"] = f"{params.get('options', '')} -c statement_timeout={int(CHECK_SECONDS * 1000)}".strip()
    with psycopg.connect(**params, connect_timeout=2, autocommit=True) as conn:
        schemas = [row[0] for row in conn.execute(
            sql.SQL("SELECT schema_name FROM {} WHERE schema_name <> 'public'").format(sql.Identifier(Tenant._meta.db_table)))]
        if not schemas:
            return {"up": 1, "verdicts": {}}
        per_schema = sql.SQL(" UNION ALL ").join(
            sql.SQL("SELECT certification FROM {}.{} WHERE removed_in_id IS NULL").format(
                sql.Identifier(schema), sql.Identifier(Tool._meta.db_table))
            for schema in schemas
        )
        try:
            verdicts = dict(conn.execute(sql.SQL(
                "SELECT certification, count(*) FROM ({}) AS tools GROUP BY certification").format(per_schema)).fetchall())
        except psycopg.Error as exc:  # a tenant half created or dropped meanwhile: PostgreSQL itself answered
            log.warning("metrics: tools by verdict could not be read: %s", type(exc).__name__)
            return {"up": 1}
    return {"up": 1, "verdicts": verdicts}


def _redis() -> dict:
    """Whether Redis answers, and the length of each Celery queue when the broker is Redis."""
    from asixto.celery import app

    with _redis_client(settings.REDIS_URL) as client:
        client.ping()
    broker = settings.CELERY_BROKER_URL
    if not broker.startswith(("redis://", "rediss://")):
        return {"up": 1}
    try:
        queues = sorted({app.conf.task_default_queue, *(queue.name for queue in app.conf.task_queues or ())})
        with _redis_client(broker) as client, client.pipeline(transaction=False) as pipe:
            for queue in queues:
                for suffix in PRIORITY_SUFFIXES:
                    pipe.llen(queue + suffix)
            lengths = pipe.execute()
    except Exception as exc:  # a broker of its own that does not answer: Redis itself did
        log.warning("metrics: the broker's queues could not be read: %s", type(exc).__name__)
        return {"up": 1}
    width = len(PRIORITY_SUFFIXES)
    return {"up": 1, "depths": {queue: sum(lengths[n * width:(n + 1) * width]) for n, queue in enumerate(queues)}}


def _redis_client(url):
    import redis

    return redis.Redis.from_url(url, socket_timeout=CHECK_SECONDS, socket_connect_timeout=CHECK_SECONDS)


def _bounded(checks: dict) -> dict:
    """Run each check on a thread of its own; what has not answered within CHECK_SECONDS (from
    the start of all of them) or failed is {"up": 0}."""
    results = {name: {"up": 0} for name in checks}

    def run(name, check):
        try:
            results[name] = check()
        except Exception as exc:
            log.warning("metrics: %s check failed: %s", name, type(exc).__name__)

    threads = [threading.Thread(target=run, args=item, daemon=True, name=f"metrics-{item[0]}") for item in checks.items()]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + CHECK_SECONDS
    for thread in threads:
        thread.join(max(deadline - time.monotonic(), 0))
    late = {name for name, thread in zip(checks, threads, strict=True) if thread.is_alive()}
    return {name: {"up": 0} if name in late else results[name] for name in checks}


class ScrapeCollector:
    """What is read at scrape time (see the module's docstring)."""

    def __init__(self, database_params: dict):
        self.database_params = database_params

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        from tools.models import Tool

        found = _bounded({"postgres": lambda: _postgres(self.database_params), "redis": _redis})
        up = GaugeMetricFamily("asixto_up", "Whether a dependency answered within a second (1) or not (0).",
                               labels=["dependency"])
        for name, result in found.items():
            up.add_metric([name], result["up"])
        yield up
        if "depths" in found["redis"]:
            depth = GaugeMetricFamily("asixto_queue_depth", "Celery messages waiting in a queue.", labels=["queue"])
            for queue, length in found["redis"]["depths"].items():
                depth.add_metric([queue], length)
            yield depth
        if "verdicts" in found["postgres"]:
            tools = GaugeMetricFamily("asixto_tools", "Live catalog tools of all tenants, by verdict.", labels=["verdict"])
            for verdict in Tool.Certification.values:
                tools.add_metric([verdict], found["postgres"]["verdicts"].get(verdict, 0))
            yield tools


def _authorized(request) -> bool:
    token = settings.ASIXTO_METRICS_TOKEN
    if not token:
        return True
    scheme, _sep, given = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


@require_GET
def metrics(request):
    """The platform's metrics in Prometheus's text format."""
    if not settings.ASIXTO_METRICS:
        raise Http404
    if not _authorized(request):
        response = HttpResponse(_("A valid metrics token is required."), status=401, content_type="text/plain; charset=utf-8")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
    from prometheus_client.multiprocess import MultiProcessCollector

    from asixto import metrics as recorded

    path = recorded.multiprocess_dir()
    os.makedirs(path, exist_ok=True)  # no process recorded anything yet
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=path)
    registry.register(ScrapeCollector(connection.get_connection_params()))
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


class MetricsMiddleware:
    """`/metrics` on the platform's own hosts, answered before the tenant middleware looks the host
    up in the database. First in MIDDLEWARE; any other request (and every request while metrics
    are off) goes on as usual."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if settings.ASIXTO_METRICS and request.path_info == "/metrics" and on_platform_host(request):
            return metrics(request)
        return self.get_response(request)
