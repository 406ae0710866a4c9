"""Registration to certified catalog on a real Celery worker over Redis (M5, R1-style flow):
the API answers at once, the worker syncs in the tenant's schema."""

import json
import time

from celery.contrib.testing.worker import start_worker
from django.db import connection

from asixto.celery import app
from examples.soporte.server import build_app
from tests.support.mcp_servers import serve_asgi
from tools.models import McpServer, Tool


def test_it_syncs_a_newly_registered_server_on_the_worker(committed_world, django_db_blocker):
    """M1, M4, M5, T1: POST /servers queues the first sync; the worker stores the certified
    catalog in this tenant's schema; POST /servers/{id}/sync queues another."""
    with django_db_blocker.unblock(), serve_asgi(build_app()) as url, start_worker(
        app, perform_ping_check=False, pool="solo", loglevel="WARNING"
    ):
        client = committed_world.api()
        response = client.post(
            "/api/v1/servers", json.dumps({"slug": "soporte", "transport": "streamable_http", "url": f"{url}/mcp"}),
            content_type="application/json",
        )
        assert response.status_code == 201, response.content
        server_id = response.json()["id"]
        state = wait_for_sync(client, server_id)
        assert state["sync_status"] == "ok" and state["protocol_version"] == "2026-07-28"
        tools = client.get("/api/v1/tools?server=soporte").json()
        assert [t["name"] for t in tools["results"]] == ["abrir_caso_soporte", "consultar_caso", "buscar_producto"]
        assert all(t["certification"] == "certified" for t in tools["results"])

        assert client.post(f"/api/v1/servers/{server_id}/sync").status_code == 202
        again = wait_for_sync(client, server_id)
        versions = client.get(f"/api/v1/servers/{server_id}/versions").json()["results"]
        # Nothing changed on the server: the sync time moves, the catalog history does not (A2).
        assert [v["number"] for v in versions] == [1] and again["synced_at"] > state["synced_at"]
    with committed_world.schema():
        assert McpServer.objects.get().sync_status == "ok" and Tool.objects.count() == 3
    connection.set_schema_to_public()


def wait_for_sync(client, server_id, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = client.get(f"/api/v1/servers/{server_id}").json()
        if state["sync_status"] in ("ok", "error"):
            return state
        time.sleep(0.05)
    raise AssertionError(f"sync did not finish: {state}")
