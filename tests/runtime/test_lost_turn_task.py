"""A turn whose task was lost on its way to a worker (issue 19, found by tests/test_fault_run.py).

kombu's Redis transport takes a message off the queue with BRPOP and only then adds it to the set
of unacknowledged messages: when the connection is cut while the reply is on its way, the message
is in neither, and no visibility timeout brings it back. The turn stayed queued until the sweep of
stalled turns sent it again after ASIXTO_TURN_RESEND_SECONDS (5 minutes). Now the sweep knows from
its own message, which came through the same queue behind the turn's task, that the task was
handed out and never claimed, and sends the turn again at once.

The worker reaches Redis through a TCP proxy (tests/support/tcp_proxy.py) that drops the reply
carrying the turn's task and cuts the connections: Redis itself is shared and never stopped. No
beat runs: the test sends the sweep once, as beat would."""

import json
from datetime import timedelta

import redis
from django.conf import settings
from django.db import connection
from django.utils import timezone

from runtime.models import Turn, TurnEvent
from runtime.tasks import requeue_stalled_turns
from tests.runtime.runtime_support import CHANNEL_DEFAULTS, agent, wait_until_finished
from tests.support import waiting
from tests.support.celery_worker import worker_process
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, say
from tests.support.tcp_proxy import TcpProxy

CEILING = 120  # seconds: a worker starting (and connecting again) on a loaded 2-CPU machine


def test_a_turn_whose_task_redis_handed_out_as_it_was_cut_is_sent_again_by_the_next_sweep(
    committed_world, django_db_blocker, tmp_path
):
    """Issue 19 ("a killed worker's turns resume within a minute", the lost task of the fault run):
    the reply to the worker's BRPOP carrying the turn's task is lost in a Redis cut, so the task is
    gone from Redis; the worker connects again and answers a later turn. The next sweep, sent after
    that, sends the lost turn again and it is answered once, though it is far younger than
    ASIXTO_TURN_RESEND_SECONDS (the default, 5 minutes). Before, the sweep left it queued."""
    world, model = committed_world, ScriptedModel([say("Hola, ¿en qué te ayudo?")])
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    redis_port = int(settings.REDIS_URL.rsplit(":", 1)[1].split("/")[0])
    log = tmp_path / "worker.log"
    with django_db_blocker.unblock(), TcpProxy(redis_port) as proxy, serve_asgi(model.app()) as model_url, \
            agent(world, f"{model_url}/v1"), \
            worker_process(stderr=log.open("w"), ASIXTO_TURN_PICKUP_SECONDS=1,
                           REDIS_URL=f"redis://127.0.0.1:{proxy.port}/{settings.REDIS_URL.rsplit('/', 1)[1]}") as worker:
        client = world.api(world.channel_key)

        def conversation():
            started = client.post("/api/v1/conversations", json.dumps(CHANNEL_DEFAULTS),
                                  content_type="application/json")
            return started.json()["messages_url"]

        def posted(messages_url):
            answer = client.post(messages_url, json.dumps({"text": "Hola"}), content_type="application/json")
            assert answer.status_code == 202, answer.content
            return answer.json()["id"]

        wait_until_finished(world, posted(conversation()), timeout=CEILING)  # the worker is up and consuming
        messages_url = conversation()
        cut = proxy.cut_when(b"runtime.tasks.turn_run")  # the next turn's task, on its way to the worker
        lost = posted(messages_url)
        assert cut.wait(CEILING), "the worker never took the turn's task"
        assert broker.llen("celery") == 0 and not any(lost.encode() in value for value in broker.hvals("unacked")), \
            "the turn's task should be gone from Redis"
        proxy.up()
        # The worker connected again and took a later task; the lost turn was posted more than
        # ASIXTO_TURN_PICKUP_SECONDS before the sweep below is sent.
        wait_until_finished(world, posted(conversation()), timeout=CEILING)
        with world.schema():
            queued = Turn.objects.get(pk=lost)
        connection.set_schema_to_public()
        assert queued.status == Turn.Status.QUEUED
        waiting.wait_for(lambda: timezone.now() > queued.created_at + timedelta(seconds=2), "the pickup time", CEILING)

        requeue_stalled_turns.delay()  # as beat sends it: behind every task sent before
        turn = wait_until_finished(world, lost, timeout=CEILING)
        assert worker.poll() is None
    connection.set_schema_to_public()
    assert (turn.status, turn.reply.text, turn.runs) == (Turn.Status.DONE, "Hola, ¿en qué te ayudo?", 1), \
        log.read_text()[-3000:]
    with world.schema():
        assert TurnEvent.objects.filter(turn_id=lost, kind="reply").count() == 1
        assert Turn.objects.get(pk=lost).resent_at is not None
    connection.set_schema_to_public()
