"""Fair share on real workers (issue 19, M4): a tenant that floods the channel API with turns whose
model never answers holds at most its turns-in-flight limit of the shared worker's slots, so
another tenant's turn is answered while the flood is still held. Nothing is timed: the flooding
tenant's model answers only when the test lets it, so "B before A" is an order, not a duration."""

import json
import threading

from django.db import connection

from runtime.models import Turn
from tenants.models import Tenant
from tests.runtime.runtime_support import agent, wait_until_finished
from tests.support.celery_worker import worker_process
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, held, say

FLOOD = 8
CEILING = 240  # seconds, for a worker that starts and runs a turn on a loaded 2-CPU machine


def post(world, conversation, text):
    return world.api(world.channel_key).post(
        conversation["messages_url"], json.dumps({"text": text}), content_type="application/json")


def start(world):
    return world.api(world.channel_key).post(
        "/api/v1/conversations", json.dumps({"channel_name": "web"}), content_type="application/json").json()


def test_a_flooding_tenant_never_holds_the_slots_another_tenants_turn_needs(
    committed_world, committed_other, django_db_blocker
):
    """Issue 19 M4: one worker with 4 slots; tenant A (turns in flight: 2) posts 8 messages whose
    model answers are held: 2 turns are taken and held, 6 are refused with 429 and never queued.
    Tenant B's turn is then run and answered while A's two are still held. Without the limit, A's
    held turns would take all 4 slots and B's turn would wait behind them."""
    a, b, release = committed_world, committed_other, threading.Event()
    model_a = ScriptedModel([held(say("A"), release, hold=CEILING)])
    model_b = ScriptedModel([say("Listo, B.")])
    with django_db_blocker.unblock(), serve_asgi(model_a.app()) as url_a, serve_asgi(model_b.app()) as url_b, \
            agent(a, f"{url_a}/v1"), agent(b, f"{url_b}/v1"):
        Tenant.objects.filter(pk=a.tenant.pk).update(turns_in_flight_limit=2)
        connection.set_schema_to_public()
        try:
            with worker_process(concurrency=4):
                flood = start(a)
                answers = [post(a, flood, f"pedido {n}") for n in range(FLOOD)]
                taken = [r.json()["id"] for r in answers if r.status_code == 202]
                assert sorted(r.status_code for r in answers) == [202] * 2 + [429] * (FLOOD - 2)
                with a.schema():
                    assert Turn.objects.count() == 2  # the refused ones were never stored nor queued
                posted = post(b, start(b), "hola, ¿me ayudas?")
                assert posted.status_code == 202
                turn_b = wait_until_finished(b, posted.json()["id"], timeout=CEILING)
                with a.schema():
                    held_now = list(Turn.objects.filter(pk__in=taken).values_list("status", flat=True))
                assert turn_b.status == "done" and turn_b.reply.text == "Listo, B."
                assert all(status in ("queued", "running") for status in held_now), held_now
                assert len(model_b.requests) == 1
                release.set()
                finished = [wait_until_finished(a, pk, timeout=CEILING) for pk in taken]
        finally:
            release.set()
            connection.set_schema_to_public()
    assert [turn.status for turn in finished] == ["done", "done"]
