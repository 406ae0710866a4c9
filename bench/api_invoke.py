"""The test console over HTTP (`POST /api/v1/tools/{id}/invoke`) under the server `./run` uses.

    python bench/api_invoke.py [--levels 1,8,32] [--seconds 15]

gunicorn with bin/gunicorn.conf.py (gthread workers, the pooled database connections of
asixto/settings.py) serves the benchmark's own database; the example MCP server
(examples/soporte) is registered and certified for one tenant. At each concurrency level that
many client threads (keep-alive, one httpx client each) invoke its `buscar_producto` for
`--seconds`. Printed per level: p50 and p99 latency, throughput, responses that are not 200
(5xx counted apart: the goal is none), and the peak number of PostgreSQL sessions on the
benchmark's database (pg_stat_activity polled every 20 ms, the poller's own excluded).
Environment knobs of the server (WEB_CONCURRENCY, WEB_THREADS, DB_POOL_MAX_SIZE) pass through."""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from _django import ROOT, setup


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(port, what, process=None, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise SystemExit(f"{what} exited with status {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{what} did not start")


class SessionPeak:
    """Polls pg_stat_activity for the sessions on one database; keeps the peak."""

    def __init__(self, admin_url, database):
        import psycopg

        self.connection = psycopg.connect(admin_url, autocommit=True)
        self.database = database
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self):
        while not self._stop.wait(0.02):
            (count,) = self.connection.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [self.database]
            ).fetchone()
            self.peak = max(self.peak, count)

    def reset(self):
        self.peak = 0

    def close(self):
        self._stop.set()
        self._thread.join(5)
        self.connection.close()


def run_level(url, headers, body, concurrency, seconds):
    import httpx

    latencies, statuses, lock = [], {}, threading.Lock()
    stop_at = time.monotonic() + seconds
    start = threading.Barrier(concurrency + 1)

    def client():
        with httpx.Client(timeout=120) as http:
            start.wait()
            while time.monotonic() < stop_at:
                began = time.perf_counter()
                try:
                    status = http.post(url, content=body, headers=headers).status_code
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                elapsed = time.perf_counter() - began
                with lock:
                    latencies.append(elapsed)
                    statuses[status] = statuses.get(status, 0) + 1

    threads = [threading.Thread(target=client) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    return latencies, statuses, wall


BODY = json.dumps({"arguments": {"consulta": "router"}})


def url_for(port, tool_id):
    return f"http://127.0.0.1:{port}/api/v1/tools/{tool_id}/invoke"


def headers_for(created):
    return {"Authorization": f"Bearer {created.admin_api_key}", "Content-Type": "application/json"}


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--levels", default="1,8,32")
    parser.add_argument("--seconds", type=float, default=15.0)
    args = parser.parse_args()
    os.environ["ASIXTO_ALLOW_PRIVATE_HOSTS"] = "1"
    setup()
    from django.conf import settings
    from django.db import connection
    from django_tenants.utils import tenant_context

    from tenants.services import tenant_create
    from tools.models import Tool
    from tools.services import catalog_sync, server_create

    database = settings.DATABASES["default"]["NAME"]
    database_url = os.environ["DATABASE_URL"]
    example_port, web_port = free_port(), free_port()
    example = subprocess.Popen(
        [sys.executable, "-m", "examples.soporte", "--host", "127.0.0.1", "--port", str(example_port)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    web = None
    peak = None
    try:
        wait_for(example_port, "the example server", example)
        created = tenant_create(slug="bench-invoke", name="Bench")
        with tenant_context(created.tenant):
            catalog_sync(server=server_create(data={"slug": "soporte", "transport": "streamable_http",
                                                    "url": f"http://127.0.0.1:{example_port}/mcp"}))
            tool_id = Tool.objects.get(prefixed_name="soporte__buscar_producto").pk
        connection.set_schema_to_public()
        connection.close()
        env = {**os.environ, "PORT": str(web_port), "HOST": "127.0.0.1", "DATABASE_URL": database_url,
               "DJANGO_SETTINGS_MODULE": "asixto.settings", "LOG_LEVEL": "WARNING"}
        log = tempfile.NamedTemporaryFile("w+", prefix="asixto-bench-gunicorn-", suffix=".log")
        web = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "bin/gunicorn.conf.py", "asixto.wsgi:application"],
            cwd=ROOT, env=env, stdout=log, stderr=log,
        )
        wait_for(web_port, "gunicorn", web)
        if run_level(url_for(web_port, tool_id), headers_for(created), BODY, 1, 0.5)[1].get(200) is None:
            log.seek(0)
            raise SystemExit(f"gunicorn does not answer the invoke:\n{log.read()[-3000:]}")
        url, headers, body = url_for(web_port, tool_id), headers_for(created), BODY
        run_level(url, headers, body, 4, 2.0)  # warm-up: every worker loads the app and its caches
        admin_url = database_url.rsplit("/", 1)[0] + "/postgres"
        peak = SessionPeak(admin_url, database)
        print(f"gunicorn: WEB_CONCURRENCY={os.environ.get('WEB_CONCURRENCY', '2')} "
              f"WEB_THREADS={os.environ.get('WEB_THREADS', '8')} "
              f"DB_POOL_MAX_SIZE={os.environ.get('DB_POOL_MAX_SIZE', str(settings.DB_POOL_MAX_SIZE))}; "
              f"{args.seconds:g} s per level")
        print(f"{'clients':>7} {'requests':>8} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>8} {'non-200':>8} {'5xx':>5} {'peak PG sessions':>17}")
        for level in [int(value) for value in args.levels.split(",")]:
            peak.reset()
            latencies, statuses, wall = run_level(url, headers, body, level, args.seconds)
            errors = sum(count for status, count in statuses.items() if status != 200)
            server_errors = sum(count for status, count in statuses.items() if isinstance(status, int) and status >= 500)
            print(f"{level:>7} {len(latencies):>8} {statistics.median(latencies) * 1000:>8.1f} "
                  f"{percentile(latencies, 0.99) * 1000:>8.1f} {len(latencies) / wall:>8.1f} {errors:>8} "
                  f"{server_errors:>5} {peak.peak:>17}", flush=True)
            if errors:
                print(f"        statuses: {statuses}")
    finally:
        if peak is not None:
            peak.close()
        for process in (web, example):
            if process is not None:
                process.terminate()
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()


if __name__ == "__main__":
    main()
