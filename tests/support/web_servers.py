"""The project's own web app served for real, for tests of streaming responses:

    with asgi_server() as base_url: ...     # asixto.asgi under uvicorn, in a thread
    with wsgi_server() as base_url: ...     # asixto.wsgi under gunicorn (gthread), a child process
    with wsgi_server(own_group=True) as base_url: ...   # in a process group of its own (tests/test_scale_out.py)

Both use the test database (the child process gets its name in DATABASE_URL) and the tests'
Redis database, so they see committed test data (`committed_world`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import httpx
from django.conf import settings

from tests.support.mcp_servers import serve_asgi

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def asgi_server():
    from asixto.asgi import application

    with serve_asgi(application, lifespan="off", shutdown_grace=1.0) as url:
        yield url


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _database_url() -> str:
    db = settings.DATABASES["default"]
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def process_stop(process: subprocess.Popen, *, own_group: bool = False, grace: float = 15.0) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds; with `own_group`, to the whole process group
    the process leads (its children too), which is killed in any case at the end."""
    def send(sig):
        try:
            os.killpg(process.pid, sig) if own_group else process.send_signal(sig)
        except ProcessLookupError:
            pass

    if process.poll() is None:
        send(signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            send(signal.SIGKILL)
            process.wait(5)
    if own_group:
        send(signal.SIGKILL)  # whatever the leader left behind


@contextmanager
def wsgi_server(*, threads: int = 8, startup_timeout: float = 60.0, database_url: str | None = None,
                redis_url: str | None = None, project_config: bool = False, log_level: str = "warning",
                output=None, own_group: bool = False, **extra_env):
    """`redis_url`: another Redis for the server (its database number is the tests' all the same);
    `project_config`: with bin/gunicorn.conf.py under the arguments given here; `output`: a file
    for the server's stdout and stderr; `own_group`: in a new session (its own process group), all
    of which is stopped at the end; `extra_env`: more environment variables."""
    with gunicorn_server(threads=threads, startup_timeout=startup_timeout, database_url=database_url,
                         redis_url=redis_url, config=project_config, log_level=log_level, output=output,
                         own_group=own_group, env=extra_env) as (url, _process):
        yield url


@contextmanager
def gunicorn_server(*, threads: int = 8, workers: int = 1, startup_timeout: float = 60.0, database_url: str | None = None,
                    redis_url: str | None = None, config: bool = False, log_level: str = "warning", output=None,
                    own_group: bool = False, env: dict | None = None):
    """gunicorn as a child process: yields its URL and the master's process. With `config`, the
    project's bin/gunicorn.conf.py (its hooks) under the options given here; `own_group`: in a new
    session (its own process group), all of which is stopped at the end; `env` adds variables."""
    port = _free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": database_url or _database_url(),
           "DB_CONN_MAX_AGE": "0", "DB_POOL_TIMEOUT": "5",  # as bin/gunicorn.conf.py sets it for the web
           "PORT": str(port), **(env or {})}  # PORT: the config's control socket, one per server
    if redis_url:
        env["REDIS_URL"] = redis_url
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", *(["-c", "bin/gunicorn.conf.py"] if config else []), "asixto.wsgi:application",
         "--worker-class", "gthread", "--workers", str(workers), "--threads", str(threads),
         "--bind", f"127.0.0.1:{port}", "--log-level", log_level, "--timeout", "120"],
        cwd=ROOT, env=env, stdout=output, stderr=output, start_new_session=own_group,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {process.returncode}")
            try:
                httpx.get(f"{url}/api/v1/health", timeout=10)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise RuntimeError("gunicorn did not start") from None
                time.sleep(0.1)
        yield url, process
    finally:
        process_stop(process, own_group=own_group)
