"""The production web server (`./run`, bin/gunicorn.conf.py): gunicorn's threaded workers serve
the API and the static files, and many requests at once never take more database connections
than the pool allows (T1 availability, A1)."""

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import psycopg
import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]
CEILING = 60


def wait_until_serving(port, server, ceiling=CEILING) -> bool:
    """Whether the server answers (a 401 without a key) before it exits or the generous ceiling."""
    stopped = threading.Event()
    for _ in range(int(ceiling / 0.1)):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/v1/tenant", timeout=5).status_code == 401:
                return True
        except httpx.HTTPError:
            pass
        if server.poll() is not None:
            return False
        stopped.wait(0.1)
    return False


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_gunicorn_serves_the_api_and_static_files_within_the_connection_bound(committed_world, django_db_blocker, tmp_path):
    """A1, A4, T1: 48 API requests from 24 clients at once to 2 workers × 8 threads with a
    pool of 3 connections per worker: every request answers 200 (requests wait for a
    connection, none fails), PostgreSQL never sees more than 2 × 3 of the server's sessions;
    the dashboard's CSS is served by the app itself."""
    settings = connection.settings_dict
    database_url = f"postgres://{settings['USER']}@{settings['HOST']}:{settings['PORT']}/{settings['NAME']}"
    port = free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": database_url, "PORT": str(port),
           "HOST": "127.0.0.1", "WEB_CONCURRENCY": "2", "WEB_THREADS": "8", "DB_POOL_MAX_SIZE": "3",
           "PGAPPNAME": "asixto-web-under-test", "LOG_LEVEL": "WARNING"}
    log = (tmp_path / "gunicorn.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "bin/gunicorn.conf.py", "asixto.wsgi:application"],
        cwd=ROOT, env=env, stdout=log, stderr=log,
    )
    admin = psycopg.connect(database_url.rsplit("/", 1)[0] + "/postgres", autocommit=True)
    peak, done = [0], threading.Event()

    def watch_sessions():
        while not done.wait(0.02):
            # This suite's database only: a second copy of the suite may run the same test beside it.
            (count,) = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'asixto-web-under-test' AND datname = %s",
                (settings["NAME"],),
            ).fetchone()
            peak[0] = max(peak[0], count)

    statuses, lock = [], threading.Lock()

    def client():
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=CEILING) as http:
            for _ in range(2):
                status = http.get("/api/v1/tenant", headers={"Authorization": f"Bearer {committed_world.admin_key}"}).status_code
                with lock:
                    statuses.append(status)

    watcher = threading.Thread(target=watch_sessions, daemon=True)
    try:
        with django_db_blocker.unblock():
            if not wait_until_serving(port, server):
                pytest.fail(f"gunicorn did not start: {(tmp_path / 'gunicorn.log').read_text()}")
            watcher.start()
            clients = [threading.Thread(target=client) for _ in range(24)]
            for thread in clients:
                thread.start()
            for thread in clients:
                thread.join(CEILING)
            css = httpx.get(f"http://127.0.0.1:{port}/static/asixto/app.css", timeout=CEILING)
    finally:
        done.set()
        server.terminate()
        server.wait(CEILING)
        admin.close()
        log.close()
    assert statuses == [200] * 48, (tmp_path / "gunicorn.log").read_text()[-3000:]
    assert 1 <= peak[0] <= 2 * 3
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
