"""More than one machine (issue 21, item 5; issue 19's orphan beat): two gunicorn web servers and
two Celery workers, each in a process group of its own as if on separate hosts, and one beat,
all on one PostgreSQL and one Redis. Turns posted round-robin to both web servers each run once
(one run, one reply, one tool call per idempotency key, one webhook delivery each); two syncs
of one changed catalog, asked of both web servers at once, store one catalog version; a worker
killed (SIGKILL to its whole group) while it waits on the model leaves its turn to the other
worker, which stores one reply; beat's periodic sweep runs once per send, and the killed group
leaves no process (no orphan beat) behind.

The real model, tool server and webhook receiver are loopback doubles in this process; the lease
and the sweeps are shortened through their settings' environment variables."""

import json
import os
import re
import signal
import threading
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import httpx
import psutil
from django.db import connection

from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from runtime.models import Message, Turn, TurnEvent
from tests.runtime.runtime_support import CHANNEL_DEFAULTS, agent, recording_app, register_soporte, tool_calls_seen
from tests.support.celery_worker import worker_process
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, held, say
from tests.support.mutable_catalog import MutableCatalog
from tests.support.web_servers import ROOT, process_stop, wsgi_server
from tests.support.webhook_receiver import Receiver
from tests.tools.contract_samples import good
from tools.models import CatalogVersion, McpServer
from tools.services import catalog_sync, server_create

TURNS = 20
MARKED = "pedido-bloqueo"
OPEN_CASE = "soporte__abrir_caso_soporte"
CEILING = 180  # seconds: generous, the machine is shared
# Short lease and sweeps (60 s, 60 s and 30 s in production) so a takeover takes seconds here.
SHARED_ENV = {"ASIXTO_TURN_LEASE_SECONDS": "10", "ASIXTO_TURN_LEASE_RENEW_SECONDS": "2",
              "ASIXTO_STALLED_SWEEP_SECONDS": "2", "ASIXTO_WEBHOOK_SWEEP_SECONDS": "2"}
SWEEP_DONE = re.compile(r"Task runtime\.tasks\.webhook_outbox_sweep\[([0-9a-f-]+)\] succeeded")


def wait_for(predicate, what, ceiling=CEILING):
    deadline = time.monotonic() + ceiling
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"waited {ceiling} s for {what}"
        time.sleep(0.2)
    return value


class Model:
    """Each turn: one call to the case-opening tool, then prose naming the turn's order. The
    marked turn's first request is held until `release` is set (its worker is killed meanwhile)."""

    def __init__(self):
        self.release = threading.Event()
        self.asked = Counter()  # order → requests
        self.scripted = ScriptedModel([self.answer])

    def answer(self, request):
        order = re.search(r"pedido-(\d+|bloqueo)", json.dumps(request["messages"], ensure_ascii=False)).group(0)
        self.asked[order] += 1
        first_of_run = self.asked[order] == 1 or (order == MARKED and self.asked[order] == 2)
        if not first_of_run:
            return say(f"Caso registrado para {order}.")
        move = call(OPEN_CASE, {"documento": "1020304050", "tipo": "falla", "descripcion": f"Sin internet ({order})"})
        return held(move, self.release) if order == MARKED and self.asked[order] == 1 else move


def beat_process(log: Path, schedule: Path, env: dict):
    import subprocess
    import sys

    environ = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", **env}
    return subprocess.Popen([sys.executable, "-m", "celery", "-A", "asixto", "beat", "-s", str(schedule), "--loglevel", "DEBUG"],
                            cwd=ROOT, env=environ, stdout=subprocess.DEVNULL, stderr=log.open("w"), start_new_session=True)


def group_members(pgid: int) -> list[psutil.Process]:
    members = []
    for process in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(process.pid) == pgid and process.info["status"] != psutil.STATUS_ZOMBIE:
                members.append(process)
        except (ProcessLookupError, psutil.Error):
            pass
    return members


def beats_running() -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if "beat" in cmdline and "asixto" in cmdline and str(ROOT) == _cwd(process):
            found.append(process)
    return found


def _cwd(process):
    try:
        return process.cwd()
    except psutil.Error:
        return ""


def worker_holding(workers, client_port: int):
    """The worker process with the TCP connection whose local port is `client_port`."""
    for worker in workers:
        if any(c.laddr and c.laddr.port == client_port for c in psutil.Process(worker.pid).net_connections("tcp")):
            return worker
    return None


def test_two_web_servers_and_two_workers_do_everything_once(committed_world, django_db_blocker, tmp_path):
    """R1, R10, M5, issue 21 item 5, issue 19 (orphan beat)."""
    world, desk, log, model, receiver = committed_world, SupportDesk(), [], Model(), Receiver()
    agenda = MutableCatalog([good("consultar_agenda")])
    logs = [tmp_path / "worker-a.log", tmp_path / "worker-b.log"]
    with ExitStack() as stack:
        stack.enter_context(django_db_blocker.unblock())
        tool_url = stack.enter_context(serve_asgi(recording_app(build_app(desk), log)))
        model_url = stack.enter_context(serve_asgi(model.scripted.app()))
        hook_url = stack.enter_context(serve_asgi(receiver.app()))
        agenda_url = stack.enter_context(serve_asgi(agenda.app()))
        stack.enter_context(agent(world, f"{model_url}/v1"))
        register_soporte(world, tool_url)
        with world.schema():
            agenda_server = server_create(data={"slug": "agenda", "transport": "streamable_http", "url": f"{agenda_url}/mcp"})
            catalog_sync(server=agenda_server)
        connection.set_schema_to_public()

        beat = beat_process(tmp_path / "beat.log", tmp_path / "beat-schedule", SHARED_ENV)
        stack.callback(process_stop, beat, own_group=True)
        webs = [stack.enter_context(wsgi_server(threads=4, own_group=True, **SHARED_ENV)) for _ in range(2)]
        workers = [stack.enter_context(worker_process(concurrency=8, loglevel="DEBUG", stderr=path.open("w"), own_group=True,
                                                      **SHARED_ENV)) for path in logs]
        admin = {"Authorization": f"Bearer {world.admin_key}"}
        channel = {"Authorization": f"Bearer {world.channel_key}"}
        assert httpx.post(f"{webs[0]}/api/v1/webhooks", json={"url": f"{hook_url}/hook"}, headers=channel,
                          timeout=60).status_code == 201

        # Two syncs of a changed catalog at once, one through each web server: one new version.
        agenda.tools[0]["description"] = "Consulta la agenda de visitas técnicas del cliente por documento."
        listed = agenda.list_calls
        sync_answers = []
        syncs = [threading.Thread(target=lambda web=web: sync_answers.append(
            httpx.post(f"{web}/api/v1/servers/{agenda_server.pk}/sync", headers=admin, timeout=60).status_code)) for web in webs]
        for thread in syncs:
            thread.start()
        for thread in syncs:
            thread.join(60)
        assert sync_answers == [202, 202]

        def post_turn(web, order):
            conversation = httpx.post(f"{web}/api/v1/conversations", json=CHANNEL_DEFAULTS, headers=channel, timeout=60)
            assert conversation.status_code == 201, conversation.text
            posted = httpx.post(f"{web}{conversation.json()['messages_url']}", json={"text": f"Ábrame un caso, {order}"},
                                headers=channel, timeout=60)
            assert posted.status_code == 202, posted.text
            return posted.json()["id"]

        def turn_status(turn_id, web):
            return httpx.get(f"{web}/api/v1/turns/{turn_id}", headers=channel, timeout=60).json()["status"]

        turn_ids = [post_turn(webs[n % 2], f"pedido-{n:02d}") for n in range(TURNS)]
        for n, turn_id in enumerate(turn_ids):
            wait_for(lambda: turn_status(turn_id, webs[n % 2]) in {"done", "failed"}, f"turn {n}")
        wait_for(lambda: agenda.list_calls >= listed + 4, "both syncs to read the catalog")
        with world.schema():
            wait_for(lambda: McpServer.objects.get(pk=agenda_server.pk).sync_status == "ok", "the syncs to finish")
            versions = list(CatalogVersion.objects.filter(server=agenda_server).values_list("number", flat=True))

        # The marked turn waits on the model; the worker running it is killed with its whole group.
        marked_id = post_turn(webs[0], MARKED)
        wait_for(lambda: model.asked[MARKED] == 1, "the marked turn to reach the model")
        held_port = model.scripted.clients[[i for i, r in enumerate(model.scripted.requests)
                                            if MARKED in json.dumps(r["messages"], ensure_ascii=False)][0]][1]
        victim = wait_for(lambda: worker_holding(workers, held_port), "the worker holding the marked turn")
        survivor = workers[1 - workers.index(victim)]
        with world.schema():
            first_runner = Turn.objects.get(pk=marked_id).runner
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(30)
        wait_for(lambda: not group_members(victim.pid), "the killed group to be gone", 30)
        model.release.set()  # the held answer goes to a dead socket
        wait_for(lambda: turn_status(marked_id, webs[1]) in {"done", "failed"}, "the marked turn on the other worker")
        all_ids = [*turn_ids, marked_id]
        wait_for(lambda: len(receiver.received) >= len(all_ids), "every webhook delivery")
        # Two more sweeps after the last delivery: none of them sends a delivery again.
        done_sweeps = len(SWEEP_DONE.findall(logs[workers.index(survivor)].read_text()))
        wait_for(lambda: len(SWEEP_DONE.findall(logs[workers.index(survivor)].read_text())) >= done_sweeps + 2, "two more sweeps")
        beats = beats_running()
        assert survivor.poll() is None and beat.poll() is None

    connection.set_schema_to_public()
    with world.schema():
        turns = {str(t.pk): t for t in Turn.objects.filter(pk__in=all_ids).select_related("reply")}
        agent_messages = Counter(Message.objects.filter(role="agent", conversation_id__in=[t.conversation_id for t in turns.values()])
                                 .values_list("conversation_id", flat=True))
        replies = Counter(TurnEvent.objects.filter(turn_id__in=all_ids, kind="reply").values_list("turn_id", flat=True))

    # Every turn ran once, on one worker or the other; its tool call reached the server once.
    assert sorted((t.status, t.runs) for pk, t in turns.items() if pk != marked_id) == [("done", 1)] * TURNS
    assert all(count == 1 for count in agent_messages.values()) and len(agent_messages) == TURNS + 1
    assert all(count == 1 for count in replies.values()) and len(replies) == TURNS + 1
    keys = Counter(key for _name, _args, key in tool_calls_seen(log))
    assert len(keys) == TURNS + 1 and set(keys.values()) == {1} and desk.case_count == TURNS + 1
    assert all(count == 3 for order, count in model.asked.items() if order != MARKED) and len(model.asked) == TURNS + 1
    # The killed worker's turn: taken over by the other worker, one reply, its held request asked again.
    marked = turns[marked_id]
    assert (marked.status, marked.runs, marked.reply.text) == ("done", 2, f"Caso registrado para {MARKED}.")
    assert marked.runner != first_runner and model.asked[MARKED] == 4
    # One webhook delivery per turn, none repeated.
    deliveries = Counter(r.headers["x-asixto-delivery"] for r in receiver.received)
    assert set(deliveries.values()) == {1} and sorted(r.json["turn_id"] for r in receiver.received) == sorted(all_ids)
    # Two syncs of one change: one new catalog version.
    assert sorted(versions) == [1, 2]
    # One beat; each sweep it sent ran on exactly one worker; the killed group left nothing behind.
    assert group_members(victim.pid) == [] and len(beats) == 1
    sweeps = Counter(task for path in logs for task in SWEEP_DONE.findall(path.read_text()))
    assert len(sweeps) >= 3 and set(sweeps.values()) == {1}
