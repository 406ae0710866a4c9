"""A real Celery worker process's metrics reach the web's scrape (issue 21): the worker writes to
the same multiprocess directory, so a turn it runs is in flight while its model answer is held,
and counted once done; when the worker stops, its live gauge leaves with it."""

import json
import os
import threading

from django.db import connection

from asixto import metrics
from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from tests.runtime.runtime_support import agent, register_soporte, wait_until_finished
from tests.support.celery_worker import worker_process
from tests.support.mcp_servers import serve_asgi
from tests.support.metrics import scrape
from tests.support.model_server import ScriptedModel, call, held, say
from tests.support.waiting import wait_for

SEARCH = "soporte__buscar_producto"


def _scrape_until(condition, what, timeout=90):
    def scraped_when_ready():
        found = scrape()
        return found if condition(found) else None

    return wait_for(scraped_when_ready, what, timeout)


def _post(world, text):
    client = world.api(world.channel_key)
    conversation = client.post("/api/v1/conversations", json.dumps({"channel_name": "web"}),
                               content_type="application/json").json()
    posted = client.post(conversation["messages_url"], json.dumps({"text": text}), content_type="application/json")
    assert posted.status_code == 202, posted.content
    return posted.json()["id"]


def test_a_turn_run_by_a_worker_process_is_in_flight_then_counted(committed_world, django_db_blocker, settings):
    """Issue 21, R1, R2: while the worker's turn waits on the model, `asixto_turns_in_flight` is 1
    in the web's scrape; once it is done, the turn, its three model requests and its tool call are
    counted under the tenant, and nothing is in flight. The stopped worker's gauge file is gone."""
    settings.ASIXTO_METRICS = True
    world, gate, slug = committed_world, threading.Event(), committed_world.tenant.slug
    model = ScriptedModel([held(call(SEARCH, {"consulta": "router"}), gate), say("ok"), say("Hay routers.")])
    path = metrics.multiprocess_dir()
    with django_db_blocker.unblock(), serve_asgi(build_app(SupportDesk())) as tool_url, \
            serve_asgi(model.app()) as model_url, agent(world, f"{model_url}/v1"):
        register_soporte(world, tool_url)
        connection.set_schema_to_public()
        before = scrape()
        with worker_process(ASIXTO_METRICS="1", PROMETHEUS_MULTIPROC_DIR=path) as worker:
            turn_id = _post(world, "¿Tienen routers?")
            _scrape_until(lambda found: found.value("asixto_turns_in_flight") == 1, "the turn was never in flight")
            gate.set()
            assert wait_until_finished(world, turn_id).status == "done"
            after = _scrape_until(lambda found: found.value("asixto_turns_in_flight") == 0, "the turn stayed in flight")
    assert after.delta(before, "asixto_turns_started_total", tenant=slug) == 1
    assert after.delta(before, "asixto_turns_total", tenant=slug, status="done") == 1
    assert after.delta(before, "asixto_model_requests_total", tenant=slug, outcome="ok") == 3
    assert after.delta(before, "asixto_tool_calls_total", tenant=slug, server="soporte", outcome="ok") == 1
    assert after.delta(before, "asixto_turn_queue_seconds_count") == 1
    assert f"gauge_livesum_{worker.pid}.db" not in os.listdir(path)
    assert f"counter_{worker.pid}.db" in os.listdir(path)
