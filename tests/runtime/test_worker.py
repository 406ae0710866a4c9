"""Turns on a real Celery worker (R1) with the threads pool the runtime is designed for (P4), and
the property that design rests on: a turn holds no database connection while it waits."""

import json
import threading

from celery.contrib.testing.worker import start_worker
from django.db import connection, connections

from asixto.celery import app
from examples.soporte.server import build_app
from runtime.models import Turn
from runtime.turn import turn_execute
from tests.runtime.runtime_support import (
    agent, queued_turn, recording_app, register_soporte, run, tool_calls_seen, wait_until_finished,
)
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, held, say

SEARCH = "soporte__buscar_producto"


def shop_assistant(request):
    """A model that searches for what the customer asked, then answers with what it found."""
    messages = request["messages"]
    if "tools" not in request:  # the clean reply request (R3)
        question = messages[-1]["content"].rsplit("\n", 1)[-1]
        return say(f"Sobre «{question}»: encontré lo que buscabas.")
    if messages[-1]["role"] == "tool":
        return say("ok")
    return call(SEARCH, {"consulta": messages[-1]["content"]})


def test_turns_run_on_a_worker_with_the_threads_pool(committed_world, django_db_blocker):
    """R1, T1, P4: three customers post at once through the API; the 202s come back at once;
    a worker with the threads pool runs the three turns in the tenant's schema, each with its
    own tool call, and each conversation gets its own reply."""
    world, log = committed_world, []
    model = ScriptedModel([shop_assistant])
    with django_db_blocker.unblock(), serve_asgi(recording_app(build_app(), log)) as tool_url, \
            serve_asgi(model.app()) as model_url, agent(world, f"{model_url}/v1"), \
            start_worker(app, pool="threads", concurrency=4, perform_ping_check=False, loglevel="WARNING"):
        register_soporte(world, tool_url)
        connection.set_schema_to_public()
        client = world.api(world.channel_key)
        accepted = {}
        for product in ("router", "cable", "antena"):
            conversation = client.post("/api/v1/conversations", json.dumps({"channel_name": "web"}),
                                       content_type="application/json").json()
            response = client.post(conversation["messages_url"], json.dumps({"text": product}), content_type="application/json")
            assert response.status_code == 202
            accepted[product] = response.json()["id"]
        turns = {product: wait_until_finished(world, turn_id) for product, turn_id in accepted.items()}
    connection.set_schema_to_public()
    for product, turn in turns.items():
        assert turn.status == "done" and turn.reply.text == f"Sobre «{product}»: encontré lo que buscabas."
    assert sorted(args["consulta"] for _name, args, _key in tool_calls_seen(log)) == ["antena", "cable", "router"]


def test_a_turn_holds_no_database_connection_while_it_waits(committed_world, django_db_blocker):
    """P4: while a turn waits on the model, and while it waits on a tool, its thread has given its
    database connection back, so a few connections serve hundreds of waiting turns. (The
    gateway reads a tool from the database only the first time a process calls it after a
    catalog change: a first turn warms that cache, as any running worker's has been.)"""
    world = committed_world
    model_gate, tool_gate, tool_called = threading.Event(), threading.Event(), threading.Event()
    model = ScriptedModel([call(SEARCH, {"consulta": "cable"}), say("ok"), say("Hay cables."),
                           held(call(SEARCH, {"consulta": "router"}), model_gate), say("ok"), say("Hay routers.")])
    seen = {}
    with django_db_blocker.unblock(), serve_asgi(recording_app(build_app(), [], hold_first=2, executed=tool_called,
                                                               release=tool_gate)) as tool_url, \
            serve_asgi(model.app()) as model_url, agent(world, f"{model_url}/v1"):
        register_soporte(world, tool_url)
        tool_gate.set()  # the warm-up turn's call goes through at once
        assert run(world, queued_turn(world, "¿Cables?")).reply.text == "Hay cables."
        tool_gate.clear()
        tool_called.clear()
        model.arrived.clear()
        turn = queued_turn(world, "¿Routers?")

        def worker_thread():
            seen["db"] = connections["default"]  # this thread's own connection wrapper
            with world.schema():
                turn_execute(turn_id=turn.pk)
            connection.close()

        thread = threading.Thread(target=worker_thread, daemon=True)
        thread.start()
        assert model.arrived.wait(30)
        waiting_on_model = seen["db"].connection
        model_gate.set()
        assert tool_called.wait(30)
        waiting_on_tool = seen["db"].connection
        tool_gate.set()
        thread.join(60)
        finished = wait_until_finished(world, turn.pk)
    connection.set_schema_to_public()
    assert waiting_on_model is None and waiting_on_tool is None
    assert finished.status == Turn.Status.DONE and finished.reply.text == "Hay routers."
