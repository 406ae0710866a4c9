"""Turns of one conversation run one after the other, in the order the customer wrote (R1, R10;
found by exploratory testing: a burst of two messages got two replies in the wrong order, and the
second turn never saw the first reply). Nothing here is timed: the first turn's model answer is
held until the test lets it go, so "the second turn waits" is an order, not a duration."""

import json
import threading

from django.db import connection

from runtime.models import Message, Turn
from runtime.selectors import history_before
from tests.runtime.runtime_support import agent, wait_until_finished
from tests.support.celery_worker import worker_process
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, held, say

CEILING = 240  # seconds, for a worker that starts and runs a turn on a loaded 2-CPU machine


def send(world, url, body):
    return world.api(world.channel_key).post(url, json.dumps(body), content_type="application/json")


def test_a_burst_of_messages_is_answered_in_order_each_turn_seeing_the_reply_before_it(
        committed_world, django_db_blocker):
    """R1, R10: two messages posted while the first turn's model answer is held: the second turn
    does not start until the first has its reply (a worker with free slots waits for it), then
    runs with that reply in its history, right after the message it answers; the replies are
    stored in the order of the messages."""
    world, release = committed_world, threading.Event()
    model = ScriptedModel([held(say("Hola, ¿en qué te ayudo?"), release, hold=CEILING), say("Claro, Pedro: cuéntame.")])
    with django_db_blocker.unblock(), serve_asgi(model.app()) as url, agent(world, f"{url}/v1"):
        connection.set_schema_to_public()
        try:
            with worker_process(concurrency=4):
                conversation = send(world, "/api/v1/conversations", {"channel_name": "whatsapp"}).json()
                first = send(world, conversation["messages_url"], {"text": "Hola, buenos días"}).json()
                assert model.arrived.wait(CEILING), "the first turn never asked the model"
                second = send(world, conversation["messages_url"], {"text": "me llamo Pedro y necesito ayuda"}).json()
                with world.schema():
                    assert Turn.objects.get(pk=second["id"]).status == "queued"
                release.set()
                turns = [wait_until_finished(world, turn["id"], timeout=CEILING) for turn in (first, second)]
        finally:
            release.set()
            connection.set_schema_to_public()
    assert [turn.status for turn in turns] == ["done", "done"]
    assert turns[1].started_at >= turns[0].finished_at
    assert len(model.requests) == 2
    seen = [(m["role"], m["content"]) for m in model.requests[1]["messages"] if m["role"] in ("user", "assistant")]
    assert [text for _role, text in seen[-3:]] == ["Hola, buenos días", "Hola, ¿en qué te ayudo?",
                                                  "me llamo Pedro y necesito ayuda"], seen
    assert turns[0].reply.created_at < turns[1].reply.created_at


def test_the_history_puts_a_late_reply_after_its_question(alpha):
    """R10: a reply stored after the next message came in (the first turn of a burst finished
    late) is in that next message's history right after the message it answers."""
    with alpha.schema():
        from runtime.channel import conversation_start

        conversation = conversation_start(data={"channel_name": "whatsapp"})
        first = Message.objects.create(conversation=conversation, role="customer", text="Hola")
        second = Message.objects.create(conversation=conversation, role="customer", text="me llamo Pedro")
        reply = Message.objects.create(conversation=conversation, role="agent", text="Hola, ¿en qué te ayudo?")
        Turn.objects.create(conversation=conversation, message=first, reply=reply, status="done")
        lines, older = history_before(message=second)
    assert [(line.role, line.text) for line in lines] == [("customer", "Hola"), ("agent", "Hola, ¿en qué te ayudo?")]
    assert older == 0
