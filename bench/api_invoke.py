"""The test console over HTTP (`POST /api/v1/tools/{id}/invoke`) under the server `./run` uses.

    python bench/api_invoke.py [--levels 1,8,32] [--seconds 15]

gunicorn with bin/gunicorn.conf.py (gthread workers, the pooled database connections of
asixto/settings.py) serves the benchmark's own database; the example MCP server
(examples/soporte) is registered and certified for one tenant. At each concurrency level that
many client threads (keep-alive, one httpx client each) invoke its `buscar_producto` for
`--seconds`. Printed per level: p50 and p99 latency, throughput, responses that are not 200
(5xx counted apart: the goal is none), and the peak number of PostgreSQL sessions on the
benchmark's database (pg_stat_activity polled every 20 ms, the poller's own excluded).
Environment knobs of the server (WEB_CONCURRENCY, WEB_THREADS, DB_POOL_MAX_SIZE) pass through.

    python bench/api_invoke.py --compare [--rounds 30] [--block-size 20]

At load 1 (one client, keep-alive), the same gunicorn: rounds of blocks of `--block-size`
requests of each variant, in an order rotated round by round — `POST …/invoke`, a DB-backed
`GET /api/v1/tools/{id}` of the same API and key (authentication, tenant switch, the tool read,
its serializer), and a bare POST of the tools/call body straight to the example server (httpx
client, no gateway). Printed: the median per-request time of each and the ratios (median over
rounds of adjacent blocks), with the load average before and after. Goal: invoke ≤ 3× the GET.

    python bench/api_invoke.py --profile [--requests 400]

Where the invoke's time goes in the web process: Django's WSGI handler itself
(`asixto.wsgi.application`, every middleware, DRF, the view, the gateway, the record flush),
called in this process with a WSGI environ as gunicorn builds it — no socket and no gunicorn
(their share is the same for the GET) — under cProfile (BENCH_SORT=tottime for own time,
BENCH_PROFILE_FILE=path to keep the statistics; `--profiled get` profiles the GET instead); both
are timed the same way, without the profiler.

Not covered: TLS and a proxy in front, gunicorn's share at more than one worker (the levels
measure that, not ratios), the dashboard's console (a session and CSRF instead of a key),
servers answering slowly (the example answers at once), several API keys or tenants in turn
(one key: its tenant's caches stay warm), and a PostgreSQL on another machine."""

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

INVOKE_GOAL = 3.0


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


def compare_at_load_1(web_port, tool_id, headers, server_url, args):
    import httpx

    from gateway_overhead import Figures, Variant, compare, load_average, print_figures
    from tools.gateway import http as gateway_http

    invoke_url, get_url = url_for(web_port, tool_id), f"http://127.0.0.1:{web_port}/api/v1/tools/{tool_id}"
    bare_body = gateway_http.build_body(1, "buscar_producto", json.loads(BODY)["arguments"], {})
    bare_headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "buscar_producto"}
    clients = [httpx.Client(timeout=120) for _ in range(3)]

    def requests(client, method, url, expected, **request):
        def block(count):
            for _ in range(count):
                response = client.request(method, url, **request)
                assert response.status_code == expected, response.text[:500]
                if "invoke" in url:
                    assert response.json()["outcome"] == "ok", response.text[:500]
        return block

    variants = [
        Variant("GET /api/v1/tools/{id}", requests(clients[0], "GET", get_url, 200, headers=headers)),
        Variant("POST /api/v1/tools/{id}/invoke", requests(clients[1], "POST", invoke_url, 200, headers=headers, content=BODY)),
        Variant("bare POST to the MCP server", requests(clients[2], "POST", server_url, 200, headers=bare_headers,
                                                        content=bare_body)),
    ]
    load_before = load_average()
    figures: dict[str, Figures] = compare(variants, blocks=args.rounds, block_size=args.block_size, warm_up=args.block_size)
    load_after = load_average()
    for client in clients:
        client.close()
    print(f"gunicorn, WEB_CONCURRENCY={os.environ['WEB_CONCURRENCY']}; one client at a time; "
          f"{args.rounds} rounds of blocks of {args.block_size} requests")
    print(f"load average before: {load_before}; after: {load_after} ({os.cpu_count()} CPUs)")
    print_figures(figures, INVOKE_GOAL)
    invoke, bare = figures[variants[1].name], figures[variants[2].name]
    print(f"invoke / bare POST: {invoke.ms / bare.ms:.1f}× (medians); CPU columns are the client's (this process)")


def wsgi_environ(method, path, key, body=b""):
    """What gunicorn hands the application for one request."""
    import io

    return {
        "REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": "", "SCRIPT_NAME": "", "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_AUTHORIZATION": f"Bearer {key}", "HTTP_ACCEPT": "*/*", "HTTP_USER_AGENT": "python-httpx/0.28",
        "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr, "wsgi.url_scheme": "http", "wsgi.version": (1, 0), "wsgi.multithread": True,
        "wsgi.multiprocess": True, "wsgi.run_once": False,
    }


def wsgi_call(application, environ) -> tuple[str, bytes]:
    statuses = []
    result = application(environ, lambda status, headers, exc_info=None: statuses.append(status))
    try:
        body = b"".join(result)
    finally:
        result.close()  # request_finished: the database connection goes back, as under gunicorn
    return statuses[0], body


def statements_of(run) -> list[str]:
    from django.db import connection

    statements = []

    def wrapper(execute, sql, params, many, context):
        statements.append(" ".join(sql.split()))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        run()
    return statements


def profile_in_process(key, tool_id, requests, profiled):
    import cProfile
    import pstats

    from asixto.wsgi import application

    invoke_path, get_path = f"/api/v1/tools/{tool_id}/invoke", f"/api/v1/tools/{tool_id}"
    body = BODY.encode()

    def invoke():
        status, answer = wsgi_call(application, wsgi_environ("POST", invoke_path, key, body))
        assert status.startswith("200"), answer[:500]

    def get():
        status, answer = wsgi_call(application, wsgi_environ("GET", get_path, key))
        assert status.startswith("200"), answer[:500]

    for _ in range(50):
        invoke(), get()
    for name, run in (("GET", get), ("invoke", invoke)):
        print(f"SQL of one {name} (this thread's connection; the record writer's apart):")
        for sql in statements_of(run):
            print(f"  {sql[:150]}")
    timings = {}
    for name, run in (("GET", get), ("invoke", invoke)):
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(requests):
            run()
        timings[name] = ((time.perf_counter() - start) / requests * 1000, (time.process_time() - start_cpu) / requests * 1000)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(requests):
        (invoke if profiled == "invoke" else get)()
    profiler.disable()
    if os.environ.get("BENCH_PROFILE_FILE"):
        profiler.dump_stats(os.environ["BENCH_PROFILE_FILE"])
    pstats.Stats(profiler).sort_stats(os.environ.get("BENCH_SORT", "cumulative")).print_stats(60)
    print(f"Django's WSGI handler in this process, {requests} requests each, load average {open('/proc/loadavg').read().strip()}")
    for name, (wall, cpu) in timings.items():
        print(f"  {name:>6}: {wall:.2f} ms per request, CPU {cpu:.2f} ms (all threads of this process)")
    print(f"  invoke / GET: {timings['invoke'][0] / timings['GET'][0]:.2f}× (goal ≤ {INVOKE_GOAL})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--levels", default="1,8,32")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--compare", action="store_true", help="invoke against a GET and a bare POST, at load 1")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--block-size", type=int, default=20)
    parser.add_argument("--profile", action="store_true", help="profile the invoke through the WSGI handler in this process")
    parser.add_argument("--requests", type=int, default=400, help="requests timed and profiled with --profile")
    parser.add_argument("--profiled", choices=("invoke", "get"), default="invoke", help="the request --profile profiles")
    args = parser.parse_args()
    if args.compare:
        os.environ.setdefault("WEB_CONCURRENCY", "1")  # one worker: the client's requests all reach warm caches
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
        if args.profile:
            return profile_in_process(created.admin_api_key, tool_id, args.requests, args.profiled)
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
        if args.compare:
            return compare_at_load_1(web_port, tool_id, headers, f"http://127.0.0.1:{example_port}/mcp", args)
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
