"""Webhooks on a real Celery worker over Redis (R1): the turn runs on the worker, the delivery is
its own task, and a failed attempt comes back through the broker after its countdown, in the
tenant's schema."""

import json
import time

from celery.contrib.testing.worker import start_worker
from django.db import connection

from asixto.celery import app
from tests.runtime.runtime_support import CHANNEL_DEFAULTS, agent
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, say
from tests.support.webhook_receiver import Receiver


def test_a_delivery_is_retried_through_the_broker_after_its_pause(committed_world, django_db_blocker, settings):
    """R1, A1: 503 then 200: the second attempt arrives after the planned pause, through the
    broker (a countdown, not a loop in the worker), signed again, in the right tenant's schema."""
    settings.ASIXTO_WEBHOOK_RETRY_DELAYS = [1.5]
    receiver = Receiver([503, 200])
    model = ScriptedModel([say("Hola, ¿en qué te ayudo?")])
    with django_db_blocker.unblock(), serve_asgi(receiver.app()) as hook, serve_asgi(model.app()) as url, \
            agent(committed_world, f"{url}/v1"), start_worker(app, perform_ping_check=False, pool="solo", loglevel="WARNING"):
        client = committed_world.api(committed_world.channel_key)
        created = client.post("/api/v1/webhooks", json.dumps({"url": f"{hook}/hook"}), content_type="application/json")
        assert created.status_code == 201, created.content
        conversation = client.post("/api/v1/conversations", json.dumps(CHANNEL_DEFAULTS), content_type="application/json").json()
        turn = client.post(conversation["messages_url"], json.dumps({"text": "Hola"}), content_type="application/json").json()
        deadline = time.monotonic() + 60
        while len(receiver.received) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(receiver.received) == 2, receiver.received
        first, second = receiver.received
        assert int(second.headers["x-asixto-timestamp"]) - int(first.headers["x-asixto-timestamp"]) >= 1
        assert second.json["turn_id"] == turn["id"] and second.json["reply"] == "Hola, ¿en qué te ayudo?"
        deliveries = []
        while len(deliveries) < 2 and time.monotonic() < deadline:
            deliveries = client.get(f"/api/v1/webhooks/{created.json()['id']}/deliveries").json()["results"]
            time.sleep(0.05)
        assert [(d["attempt"], d["outcome"]) for d in reversed(deliveries)] == [(1, "retrying"), (2, "delivered")]
    connection.set_schema_to_public()
