"""Shared set-up of the turn benchmarks (P3, P4): the stand-in model, the example MCP server and a
Celery worker, each in a process of its own on loopback, and a tenant whose agent uses them."""

import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager

from _django import ROOT


WORKER_APPLICATION_NAME = "asixto-bench-worker"  # how pg_stat_activity tells the worker's connections


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, what: str, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{what} did not start on port {port}")


@contextmanager
def process(args: list[str], *, env: dict | None = None, port: int | None = None, what: str = "a child process"):
    """A child process for the block; terminated (then killed) afterwards."""
    child = subprocess.Popen(args, cwd=ROOT, env={**os.environ, **(env or {})},
                             stdout=subprocess.DEVNULL, stderr=None if os.environ.get("BENCH_VERBOSE") else subprocess.DEVNULL)
    try:
        if port is not None:
            wait_for_port(port, what)
        yield child
    finally:
        child.terminate()
        try:
            child.wait(20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(5)


@contextmanager
def model_server(*, delay: float = 0.0, tool_calls: int = 0):
    port = free_port()
    args = [sys.executable, "bench/_model_server.py", "--port", str(port), "--delay", str(delay),
            "--tool-calls", str(tool_calls)]
    with process(args, port=port, what="the stand-in model"):
        yield f"http://127.0.0.1:{port}/v1"


@contextmanager
def example_server():
    port = free_port()
    args = [sys.executable, "-m", "examples.soporte", "--host", "127.0.0.1", "--port", str(port)]
    with process(args, port=port, what="the example MCP server"):
        yield f"http://127.0.0.1:{port}/mcp"


@contextmanager
def worker(*, concurrency: int, pool_max: int = 0):
    """`celery -A asixto worker --pool threads --concurrency N` on the benchmark's database. With
    `pool_max`, Django's psycopg pool bounds its connections (bench/worker_settings.py)."""
    env = {"DB_CONN_MAX_AGE": "0", "DJANGO_SETTINGS_MODULE": "worker_settings", "BENCH_DB_POOL_MAX": str(pool_max),
           "BENCH_APPLICATION_NAME": WORKER_APPLICATION_NAME,
           "PYTHONPATH": os.pathsep.join([str(ROOT / "bench"), str(ROOT)])}
    args = [sys.executable, "-m", "celery", "-A", "asixto", "worker", "--pool", "threads", "--concurrency", str(concurrency),
            "--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat", "-Q", "celery"]
    with process(args, env=env, what="the Celery worker") as child:
        yield child


def tenant_with_agent(*, slug: str, model_url: str, mcp_url: str | None, iteration_limit: int = 6):
    """A tenant whose agent talks to `model_url`, with the example server registered and certified."""
    from django.db import connection
    from django_tenants.utils import tenant_context

    from tenants.services import tenant_create
    from tools.services import catalog_sync, server_create

    tenant = tenant_create(slug=slug, name="Bench").tenant
    tenant.model_base_url, tenant.model_name, tenant.iteration_limit = model_url, "bench", iteration_limit
    tenant.save(update_fields=["model_base_url", "model_name", "iteration_limit"])
    if mcp_url:
        with tenant_context(tenant):
            catalog_sync(server=server_create(data={"slug": "soporte", "transport": "streamable_http", "url": mcp_url}))
    connection.set_schema_to_public()
    return tenant
