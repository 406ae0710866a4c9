"""/readyz with its dependencies really gone and back (issue 21): a real gunicorn whose
PostgreSQL and Redis are reached through TCP proxies the test takes down and brings back."""

import time

import httpx
from django.conf import settings

from tests.support.tcp_proxy import TcpProxy
from tests.support.web_servers import _database_url, wsgi_server

CEILING = 90  # seconds: a loaded machine, and the database pool's reconnection backoff


def _readiness(url, *, until):
    """Poll /readyz until `until(status, body)` holds; the last answer either way."""
    deadline = time.monotonic() + CEILING
    while True:
        response = httpx.get(f"{url}/readyz", headers={"Host": "localhost"}, timeout=30)
        answer = (response.status_code, response.json())
        if until(*answer) or time.monotonic() > deadline:
            return answer
        time.sleep(0.5)


def _redis_port():
    return int(settings.REDIS_URL.rsplit(":", 1)[1].split("/")[0])


def _database_port():
    return int(settings.DATABASES["default"]["PORT"] or 5432)


def test_it_names_the_failing_dependency_and_recovers(committed_world):
    """Issue 21: 503 naming `database` while PostgreSQL is unreachable, then `redis` while Redis
    is; 200 again once each is back. Liveness stays 200 meanwhile, and no answer is a traceback."""
    with TcpProxy(_database_port()) as postgres, TcpProxy(_redis_port()) as redis:
        database_url = _database_url().replace(f":{_database_port()}/", f":{postgres.port}/")
        with wsgi_server(threads=4, database_url=database_url, redis_url=f"redis://127.0.0.1:{redis.port}/0") as url:
            assert _readiness(url, until=lambda status, _body: status == 200) == (200, {
                "status": "ok", "checks": {"database": "ok", "redis": "ok", "broker": "ok", "migrations": "ok"}})

            postgres.down()
            status, body = _readiness(url, until=lambda status, _body: status == 503)
            assert status == 503 and body["status"] == "unavailable", body
            assert body["checks"]["database"].startswith("error: "), body
            assert body["checks"]["redis"] == "ok" and body["checks"]["broker"] == "ok", body
            assert "Traceback" not in str(body) and len(body["checks"]["database"]) < 80
            live = httpx.get(f"{url}/healthz", headers={"Host": "localhost"}, timeout=30)
            assert (live.status_code, live.json()) == (200, {"status": "ok"})

            postgres.up()
            status, body = _readiness(url, until=lambda status, _body: status == 200)
            assert status == 200, body

            redis.down()
            status, body = _readiness(url, until=lambda status, _body: status == 503)
            assert status == 503 and body["checks"]["redis"].startswith("error: "), body
            assert body["checks"]["database"] == "ok", body

            redis.up()
            status, body = _readiness(url, until=lambda status, _body: status == 200)
            assert status == 200, body
