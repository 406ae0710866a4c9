"""Webhook attempts through faults (issue 19, "every attempt the server saw has its record, also
across worker kills and PostgreSQL restarts"; found by tests/test_fault_run.py).

Before, an attempt was recorded only after the receiver answered: with PostgreSQL cut at that
moment the record was never written, and a worker killed while it waited left none either; the
delivery, still holding attempt number 1, was sent again as attempt 1 after the task's hold of
ASIXTO_WEBHOOK_TIMEOUT + 60 s. Now an attempt is stored `sending` before it is sent, its answer
stored once PostgreSQL answers again, an attempt cut short becomes `interrupted` and the next one
has the next number; the hold is ASIXTO_WEBHOOK_TIMEOUT + 15 s.

Workers reach PostgreSQL through a TCP proxy (tests/support/tcp_proxy.py) the test takes down:
PostgreSQL itself is shared and never stopped."""

import json
import re
import signal
import threading
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from runtime.models import WebhookDelivery, WebhookOutbox
from runtime.webhooks import HOLD_MARGIN_SECONDS
from tests.runtime.runtime_support import CHANNEL_DEFAULTS, agent
from tests.support import waiting
from tests.support.celery_worker import run_script_process, worker_process
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, say
from tests.support.tcp_proxy import TcpProxy
from tests.support.web_servers import _database_url
from tests.support.webhook_receiver import Receiver

CEILING = 180  # seconds: workers starting on a loaded 2-CPU machine, a delivery's hold running out


def post_with_webhook(world, hook_url) -> str:
    """A webhook on the channel key, then a customer message through the channel API: the turn's id."""
    client = world.api(world.channel_key)
    created = client.post("/api/v1/webhooks", json.dumps({"url": hook_url}), content_type="application/json")
    assert created.status_code == 201, created.content
    conversation = client.post("/api/v1/conversations", json.dumps(CHANNEL_DEFAULTS), content_type="application/json")
    posted = client.post(conversation.json()["messages_url"], json.dumps({"text": "Hola"}), content_type="application/json")
    assert posted.status_code == 202, posted.content
    connection.set_schema_to_public()
    return posted.json()["id"]


def outbox_of(world, turn_id) -> WebhookOutbox | None:
    with world.schema():
        row = WebhookOutbox.objects.filter(turn_id=turn_id).first()
    connection.set_schema_to_public()
    return row


def attempts_recorded(world, delivery_id) -> dict:
    """attempt number → outcome, of the delivery's records."""
    with world.schema():
        recorded = dict(WebhookDelivery.objects.filter(delivery_id=delivery_id).values_list("attempt", "outcome"))
    connection.set_schema_to_public()
    return recorded


def seen(receiver) -> list:
    """(delivery id, attempt number) of each POST the receiver got, in order."""
    return [(r.headers["x-asixto-delivery"], int(r.headers["x-asixto-attempt"])) for r in list(receiver.received)]


def proxied_database(postgres) -> str:
    port = settings.DATABASES["default"]["PORT"] or 5432
    return _database_url().replace(f":{port}/", f":{postgres.port}/")


def test_an_attempt_answered_while_postgresql_is_cut_is_recorded_once_it_is_back(
    committed_world, django_db_blocker, tmp_path
):
    """Issue 19: the receiver gets the turn's webhook and, before it answers 200, PostgreSQL is cut
    for the worker; the worker fails to store the answer, PostgreSQL comes back. The attempt the
    receiver saw is recorded `delivered` and the delivery done: it is not sent again. Before, the
    record was never written (the task failed on it) and the delivery was left to be sent again
    under the same attempt number."""
    world, model = committed_world, ScriptedModel([say("Hola, ¿en qué te ayudo?")])
    database = settings.DATABASES["default"]
    log = tmp_path / "worker.log"
    with django_db_blocker.unblock(), TcpProxy(int(database["PORT"] or 5432), database["HOST"] or "127.0.0.1") as postgres:
        receiver = Receiver([200], before_answer=lambda number: number == 1 and postgres.down())
        with serve_asgi(receiver.app()) as hook_url, serve_asgi(model.app()) as model_url, \
                agent(world, f"{model_url}/v1"), \
                worker_process(stderr=log.open("w"), DB_POOL_TIMEOUT=2, DATABASE_URL=proxied_database(postgres)) as worker:
            turn_id = post_with_webhook(world, f"{hook_url}/hook")
            # The worker tried to store the answer and could not: PostgreSQL comes back.
            waiting.wait_for(lambda: re.search(r"OperationalError|InterfaceError", log.read_text()),
                             "the worker to fail on the database", CEILING)
            postgres.up()
            row = waiting.wait_for(lambda: (row := outbox_of(world, turn_id)) and row.done_at and row,
                                   "the delivery to be done", CEILING)
            assert worker.poll() is None
    assert seen(receiver) == [(str(row.pk), 1)]
    assert attempts_recorded(world, row.pk) == {1: WebhookDelivery.Outcome.DELIVERED}, log.read_text()[-3000:]


def test_an_attempt_whose_worker_was_killed_is_recorded_and_the_next_one_numbered_after_it(
    committed_world, django_db_blocker, tmp_path
):
    """Issue 19: the worker sending a turn's webhook is killed (SIGKILL) while the receiver holds
    its answer; another worker and beat go on. The receiver sees attempt 1, then attempt 2 of the
    same delivery, and each has its record: 1 `interrupted`, 2 `delivered`. The killed task held the
    delivery for ASIXTO_WEBHOOK_TIMEOUT + HOLD_MARGIN_SECONDS from the moment it sent (it was
    60 s beyond the timeout, read here as the hold left when the receiver got the POST). Before,
    the receiver saw attempt 1 twice, and the first had no record."""
    world, model = committed_world, ScriptedModel([say("Hola, ¿en qué te ayudo?")])
    release, arrived_at = threading.Event(), []

    def hold_the_first(number):
        if number == 1:
            arrived_at.append(timezone.now())
            release.wait(CEILING)

    receiver = Receiver([200], before_answer=hold_the_first)
    fast = {"ASIXTO_WEBHOOK_SWEEP_SECONDS": "1", "ASIXTO_STALLED_SWEEP_SECONDS": "3600"}
    with django_db_blocker.unblock(), serve_asgi(receiver.app()) as hook_url, serve_asgi(model.app()) as model_url, \
            agent(world, f"{model_url}/v1"):
        try:
            with worker_process(stderr=(tmp_path / "killed.log").open("w")) as killed:
                turn_id = post_with_webhook(world, f"{hook_url}/hook")
                waiting.wait_for(lambda: arrived_at, "the first attempt", CEILING)
                killed.send_signal(signal.SIGKILL)
                killed.wait(30)
            row = outbox_of(world, turn_id)
            hold = row.claimed_until - arrived_at[0]
            with worker_process(stderr=(tmp_path / "worker.log").open("w")), \
                    run_script_process("beat", tmp_path / "beat.log", loglevel="WARNING", **fast):
                row = waiting.wait_for(lambda: (row := outbox_of(world, turn_id)) and row.done_at and row,
                                       "another worker to deliver it", CEILING)
        finally:
            release.set()
    assert seen(receiver) == [(str(row.pk), 1), (str(row.pk), 2)]
    assert attempts_recorded(world, row.pk) == {1: WebhookDelivery.Outcome.INTERRUPTED,
                                                2: WebhookDelivery.Outcome.DELIVERED}
    assert hold <= timedelta(seconds=settings.ASIXTO_WEBHOOK_TIMEOUT + HOLD_MARGIN_SECONDS), hold
