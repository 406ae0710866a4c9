"""A task that reaches a worker while PostgreSQL is down (issue 19, found by tests/test_fault_run.py).

tenant-schemas-celery switches the connection to the task's tenant in a `task_prerun` handler,
which reads the tenant's row; Celery only logs a handler's error, so when that read failed the
task ran anyway, in the public schema: a turn's claim then failed (and its task was spent, the turn
left queued until the 5-minute resend), and a webhook's first query, with PostgreSQL back, was
refused as a missing table. Now the task reads its tenant itself before it runs and, on a database
error, is sent again after ASIXTO_TURN_RETRY_SECONDS.

The worker reaches PostgreSQL through a TCP proxy (tests/support/tcp_proxy.py) the test takes down:
PostgreSQL itself is shared and never stopped. No beat runs, so nothing but the task brings the
turn back."""

import json
import time

import redis
from django.conf import settings
from django.db import connection

from runtime.models import Turn
from tests.runtime.runtime_support import CHANNEL_DEFAULTS, agent, wait_until_finished
from tests.support import waiting
from tests.support.celery_worker import worker_process
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, say
from tests.support.tcp_proxy import TcpProxy
from tests.support.web_servers import _database_url

CEILING = 120  # seconds: a worker starting on a loaded 2-CPU machine, the pool's reconnection backoff


def test_a_turn_whose_task_arrives_while_postgresql_is_down_runs_once_it_is_back(
    committed_world, django_db_blocker, tmp_path
):
    """Issue 19 ("transient faults resume, never fail"): the worker takes the turn's task while
    PostgreSQL cannot be reached (for longer than its pool waits), then PostgreSQL comes back: the
    turn is answered, with no sweep to send it again. Before, its task ran on in the public schema,
    failed, and was spent."""
    world, model = committed_world, ScriptedModel([say("Hola, ¿en qué te ayudo?")])
    database = settings.DATABASES["default"]
    port = int(database["PORT"] or 5432)
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    log = tmp_path / "worker.log"
    with django_db_blocker.unblock(), TcpProxy(port, database["HOST"] or "127.0.0.1") as postgres, \
            serve_asgi(model.app()) as model_url, agent(world, f"{model_url}/v1"), \
            worker_process(stderr=log.open("w"), DB_POOL_TIMEOUT=2, ASIXTO_TURN_RETRY_SECONDS=2,
                           DATABASE_URL=_database_url().replace(f":{port}/", f":{postgres.port}/")) as worker:
        client = world.api(world.channel_key)
        conversation = client.post("/api/v1/conversations", json.dumps(CHANNEL_DEFAULTS), content_type="application/json")
        # The worker is up and consuming: the conversation's own tasks (if any) are taken.
        waiting.wait_for(lambda: broker.llen("celery") == 0, "the worker to take its tasks", CEILING)
        postgres.down()
        posted = client.post(conversation.json()["messages_url"], json.dumps({"text": "Hola"}),
                             content_type="application/json")
        assert posted.status_code == 202, posted.content
        waiting.wait_for(lambda: broker.llen("celery") == 0, "the worker to take the turn's task", CEILING)
        time.sleep(6)  # three times the pool's wait: the tenant's read has failed by now
        postgres.up()
        turn = wait_until_finished(world, posted.json()["id"], timeout=CEILING)
        assert worker.poll() is None
    connection.set_schema_to_public()
    assert (turn.status, turn.reply.text) == (Turn.Status.DONE, "Hola, ¿en qué te ayudo?"), log.read_text()[-3000:]
