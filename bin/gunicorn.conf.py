"""gunicorn settings for the web server `./run` starts, fit for production as they are.

    gunicorn -c bin/gunicorn.conf.py asixto.wsgi:application

gthread workers: WEB_CONCURRENCY processes (default 2) with WEB_THREADS threads each (default
8). Each process holds at most DB_POOL_MAX_SIZE database connections (asixto/settings.py), so
keep WEB_THREADS + 1 (the call-record writer) ≤ DB_POOL_MAX_SIZE, and WEB_CONCURRENCY ×
DB_POOL_MAX_SIZE plus the workers' connections below PostgreSQL's max_connections. Static files
are served by whitenoise from the app."""

import os
from pathlib import Path

# A web request waits at most this long for a database connection (the workers keep 30 s): while
# PostgreSQL is unreachable the API answers 503 with Retry-After within seconds, not after 30 s.
os.environ.setdefault("DB_POOL_TIMEOUT", "5")
_port = os.environ.get("PORT", "8000")
bind = [f"{os.environ.get('HOST', '0.0.0.0')}:{_port}"]
worker_class = "gthread"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = int(os.environ.get("WEB_THREADS", "8"))
# A request that takes longer than this is stuck (tool calls have their own, shorter limits).
timeout = int(os.environ.get("WEB_TIMEOUT", "120"))
graceful_timeout = 30
keepalive = 5
accesslog = os.environ.get("WEB_ACCESS_LOG") or None
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info").lower()
# gunicornc's control socket: one per port under var/, not one for the whole machine in ~/.gunicorn.
_var = Path(__file__).resolve().parent.parent / "var"
_var.mkdir(exist_ok=True)
control_socket = str(_var / f"gunicorn-{_port}.ctl")
# Prometheus metrics (asixto/metrics.py): the workers write their values under this directory
# (./run empties it at start), and a worker that exits leaves the sum of live gauges.
if os.environ.get("ASIXTO_METRICS", "").strip().lower() in {"1", "true", "yes", "on"}:
    os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(_var / "metrics"))


if os.environ.get("ASIXTO_LOG_FORMAT", "").strip().lower() == "json":
    from gunicorn.glogging import Logger

    class JsonLinesLogger(Logger):
        """gunicorn's own lines (start, workers, the access log) as JSON objects too, like the
        app's (asixto/logs.py)."""

        def setup(self, cfg):
            super().setup(cfg)
            from asixto.logs import JsonFormatter

            for log in (self.error_log, self.access_log):
                for handler in log.handlers:
                    handler.setFormatter(JsonFormatter())

    logger_class = JsonLinesLogger


def on_starting(server):
    # The master holds the same environment (secrets) as the workers: non-dumpable too.
    from asixto.process import make_non_dumpable

    make_non_dumpable()


def worker_exit(server, worker):
    # A worker's live stdio MCP sessions: every child stopped and reaped before it goes.
    from tools.mcp import stdio_pool

    stdio_pool.shutdown()


def child_exit(server, worker):
    # Its turns in flight are no longer in flight; what it counted stays counted.
    from asixto import metrics

    metrics.process_dead(worker.pid)
