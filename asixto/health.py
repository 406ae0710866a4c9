"""Liveness and readiness probes for load balancers and process managers (issue 21).

`GET /healthz` answers while the process is up, reading nothing. `GET /readyz` checks what a
request needs: PostgreSQL (a query), Redis (PING), the Celery broker (a connection) and that no
migration of the public schema is unapplied; 503 names the dependency that failed, by its
exception's class name only (never a URL, a password or a traceback).

Both are served on the platform's own host (localhost, 127.0.0.1 or ASIXTO_BASE_DOMAIN) by a
middleware ahead of the tenant middleware, which would otherwise read the database to resolve
the host: on a tenant's domain they do not exist (404). Each check runs in a thread of its own
with a deadline, so a dependency that hangs cannot hang the probe; a check still running from an
earlier probe is waited on again instead of started twice, so a hung dependency holds one thread
per check at most."""

import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import JsonResponse
from django.http.request import split_domain_port

CHECK_SECONDS = 2.0


def platform_hosts() -> set[str]:
    return {"localhost", "127.0.0.1", "[::1]", settings.ASIXTO_BASE_DOMAIN.lower()}


def on_platform_host(request) -> bool:
    """The request is for the platform's own host (the probes and /metrics answer there only)."""
    try:
        host = request.get_host()
    except DisallowedHost:
        return False  # Django answers it as any other request with a bad Host
    domain, _port = split_domain_port(host)
    return (domain or host).lower() in platform_hosts()


def database_check():
    from django.db import connection

    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    finally:
        connection.close()  # this thread's connection goes back to the pool


def redis_check():
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=CHECK_SECONDS, socket_timeout=CHECK_SECONDS)
    try:
        client.ping()
    finally:
        client.close()


def broker_check(timeout: float = CHECK_SECONDS):
    from asixto.celery import app

    with app.connection_for_write(url=settings.CELERY_BROKER_URL, connect_timeout=timeout,
                                  transport_options={"socket_timeout": timeout}) as conn:
        conn.ensure_connection(max_retries=0, timeout=timeout)  # one attempt: the caller decides


class UnappliedMigrations(Exception):
    pass


def migrations_check():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    try:
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    finally:
        connection.close()
    if plan:
        raise UnappliedMigrations(f"{len(plan)} unapplied")


CHECKS = {"database": database_check, "redis": redis_check, "broker": broker_check, "migrations": migrations_check}
_running: dict[str, Future] = {}
_running_lock = threading.Lock()


def _started(name: str) -> Future:
    with _running_lock:
        future = _running.get(name)
        if future is not None and not future.done():
            return future
        future = _running[name] = Future()

    def run():
        try:
            CHECKS[name]()
        except BaseException as exc:  # noqa: BLE001 - reported by class name, never raised here
            future.set_exception(exc)
        else:
            future.set_result(None)

    threading.Thread(target=run, daemon=True, name=f"readyz-{name}").start()
    return future


def _outcome(future: Future, deadline: float) -> str:
    try:
        future.result(timeout=deadline)
    except FutureTimeout:
        return "error: timeout"
    except UnappliedMigrations as exc:
        return f"error: {exc}"
    except BaseException as exc:  # noqa: BLE001
        return f"error: {type(exc).__name__}"
    return "ok"


def readiness() -> dict[str, str]:
    """Every check, run at once, each bounded by CHECK_SECONDS."""
    futures = {name: _started(name) for name in CHECKS}
    end = time.monotonic() + CHECK_SECONDS
    return {name: _outcome(future, max(0.0, end - time.monotonic())) for name, future in futures.items()}


def healthz(request):
    return JsonResponse({"status": "ok"})


def readyz(request):
    checks = readiness()
    ready = all(outcome == "ok" for outcome in checks.values())
    response = JsonResponse({"status": "ok" if ready else "unavailable", "checks": checks}, status=200 if ready else 503)
    response["Cache-Control"] = "no-store"
    return response


class ProbeMiddleware:
    """First in MIDDLEWARE: answers the probes on the platform's host before anything reads the
    database; every other request (and the probe paths on any other host) goes on unchanged."""

    views = {"/healthz": healthz, "/readyz": readyz}

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        view = self.views.get(request.path_info)
        if view is not None and request.method in ("GET", "HEAD") and on_platform_host(request):
            return view(request)
        return self.get_response(request)
