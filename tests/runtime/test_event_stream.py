"""The turn's event stream (R9, A1): server-sent events, status while the turn works, then the
reply; through the real servers the project ships (uvicorn for ASGI, gunicorn gthread for WSGI),
and through Django's own handler for the details (resume, deadline)."""

import threading
import time

import httpx
import pytest
from django.db import connection
from httpx_sse import connect_sse

from examples.soporte.server import build_app
from runtime.models import TurnEvent
from tests.runtime.runtime_support import agent, queued_turn, register_soporte, run_in_thread
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, held, say
from tests.support.web_servers import asgi_server, wsgi_server

SERVERS = {"asgi": asgi_server, "wsgi": wsgi_server}


@pytest.mark.parametrize("server", ["asgi", "wsgi"])
def test_it_streams_status_events_live_then_the_reply(committed_world, django_db_blocker, server):
    """R9, A1: a client that opened the stream before the turn started sees the status event
    ("Buscando el producto del catálogo…") while the model is still thinking, then the reply,
    then the stream ends — under uvicorn (async stream) and gunicorn gthread (sync stream)."""
    gate = threading.Event()
    model = ScriptedModel([call("soporte__buscar_producto", {"consulta": "router"}), held(say("ok"), gate),
                           say("Hay un router disponible.")])
    world = committed_world
    with django_db_blocker.unblock(), serve_asgi(build_app()) as tool_url, serve_asgi(model.app()) as model_url, \
            SERVERS[server]() as web, agent(world, f"{model_url}/v1"):
        register_soporte(world, tool_url)
        turn = queued_turn(world, "¿Routers?")
        connection.set_schema_to_public()
        received, opened = [], threading.Event()

        def read():
            headers = {"Authorization": f"Bearer {world.channel_key}"}
            with httpx.Client(base_url=web, headers=headers, timeout=60) as client, \
                    connect_sse(client, "GET", f"/api/v1/turns/{turn.pk}/events") as source:
                assert source.response.status_code == 200
                assert source.response.headers["content-type"].startswith("text/event-stream")
                opened.set()
                for event in source.iter_sse():
                    received.append((event.event, event.json(), event.id, time.monotonic()))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        assert opened.wait(60), "the stream did not open"
        runner = run_in_thread(world, turn)
        deadline = time.monotonic() + 60
        while not received and time.monotonic() < deadline:
            time.sleep(0.02)
        assert received and received[0][0] == "status", received
        assert not gate.is_set()  # the status arrived while the model was still held
        gate.set()
        runner.join(60)
        reader.join(60)
    assert not reader.is_alive(), "the stream did not end after the reply"
    assert [(kind, data["text"]) for kind, data, _id, _at in received] == [
        ("status", "Buscando el producto del catálogo…"), ("reply", "Hay un router disponible.")]
    assert received[1][1]["status"] == "done"
    with world.schema():
        assert [str(pk) for pk in TurnEvent.objects.filter(turn=turn).order_by("id").values_list("id", flat=True)] == [
            r[2] for r in received]
    connection.set_schema_to_public()


def read_stream(response) -> list[tuple[str, str]]:
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    text = b"".join(response.streaming_content).decode()
    events = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
        if "event" in fields:
            events.append((fields["event"], fields.get("id", "")))
    return events


def test_a_finished_turns_stream_replays_everything_and_resumes_after_an_id(alpha):
    """A1, R9: opened late, the stream still gives every event, from storage, and ends after the
    reply; with `Last-Event-ID` it starts after that event."""
    turn = queued_turn(alpha, "Hola")
    with alpha.schema():
        ids = [TurnEvent.objects.create(turn=turn, kind=kind, text=kind).pk for kind in ("status", "status", "reply")]
    connection.set_schema_to_public()
    client = alpha.api(alpha.channel_key)
    url = f"/api/v1/turns/{turn.pk}/events"
    assert read_stream(client.get(url)) == [("status", str(ids[0])), ("status", str(ids[1])), ("reply", str(ids[2]))]
    assert read_stream(client.get(url, HTTP_LAST_EVENT_ID=str(ids[0]))) == [("status", str(ids[1])), ("reply", str(ids[2]))]
    assert read_stream(client.get(f"{url}?after={ids[1]}")) == [("reply", str(ids[2]))]


@pytest.mark.parametrize("accept, streams", [("", True), ("*/*", True), ("text/*", True), ("text/event-stream", True),
                                            ("application/json, text/event-stream;q=0.9", True),
                                            ("application/json", False), ("text/html", False)])
def test_a_client_that_cannot_read_a_stream_gets_a_406(alpha, accept, streams):
    """A1, A4 (found by exploratory testing): the stream is `text/event-stream`; a client whose
    Accept does not admit it gets a 406 `not_acceptable` (JSON), not a stream it did not ask for."""
    turn = queued_turn(alpha, "Hola")
    with alpha.schema():
        TurnEvent.objects.create(turn=turn, kind="reply", text="Hola")
    connection.set_schema_to_public()
    headers = {"HTTP_ACCEPT": accept} if accept else {}
    response = alpha.api(alpha.channel_key).get(f"/api/v1/turns/{turn.pk}/events", **headers)
    if streams:
        assert response.status_code == 200 and response["Content-Type"].startswith("text/event-stream")
        b"".join(response.streaming_content)
    else:
        assert response.status_code == 406 and response.json()["error"]["code"] == "not_acceptable"


def test_a_stream_ends_at_its_deadline_with_a_timeout_event(alpha, settings):
    """A1: a turn that never finishes does not hold the connection forever: after the stream's
    deadline a `timeout` event tells the client to reconnect (with Last-Event-ID)."""
    settings.ASIXTO_EVENT_STREAM_SECONDS = 1.5
    turn = queued_turn(alpha, "Hola")
    with alpha.schema():
        status = TurnEvent.objects.create(turn=turn, kind="status", text="Buscando…")
    connection.set_schema_to_public()
    events = read_stream(alpha.api(alpha.channel_key).get(f"/api/v1/turns/{turn.pk}/events"))
    # The turn never finishes: only the stream's deadline can end it, with the `timeout` event.
    assert events == [("status", str(status.pk)), ("timeout", "")]


@pytest.mark.parametrize("resume", ["999999999999999999", "²", "-1", "\u0661\u0662"])
def test_a_stream_resumed_past_a_finished_turns_end_ends_at_once(alpha, settings, resume):
    """Issue 19 M3 and a low finding: a Last-Event-ID (or `after`) beyond a finished turn's reply
    ends the stream at once instead of holding it for the stream's deadline; a value that is not
    an ASCII number (`²`, Arabic-Indic digits) reads as 0, never a 500. A stream held to its
    deadline would end with a `timeout` event, which the expected lists do not have."""
    settings.ASIXTO_EVENT_STREAM_SECONDS = 20
    turn = queued_turn(alpha, "Hola")
    with alpha.schema():
        reply = TurnEvent.objects.create(turn=turn, kind="reply", text="Listo").pk
    connection.set_schema_to_public()
    client = alpha.api(alpha.channel_key)
    url = f"/api/v1/turns/{turn.pk}/events"
    expected = [] if resume.isascii() and resume.isdigit() else [("reply", str(reply))]
    assert read_stream(client.get(url, HTTP_LAST_EVENT_ID=resume)) == expected
    assert read_stream(client.get(url, {"after": resume})) == expected


def test_streams_open_at_once_are_bounded_per_key_tenant_and_process(alpha, beta, settings):
    """Issue 19 M3: at most ASIXTO_STREAMS_PER_KEY streams per channel key and ASIXTO_STREAMS_PER_TENANT
    per tenant are open at once (429 with Retry-After beyond, before anything streams), and a
    threaded process keeps threads for everything else (ASIXTO_STREAMS_PER_PROCESS); a stream
    that closes gives its slot back; another tenant is not counted with this one."""
    from tenants.models import ApiKey
    from tenants.services import api_key_create

    settings.ASIXTO_STREAMS_PER_KEY, settings.ASIXTO_STREAMS_PER_TENANT, settings.ASIXTO_STREAMS_PER_PROCESS = 2, 3, 4
    turn = queued_turn(alpha, "Hola")  # never finishes: its streams stay open until closed
    with alpha.schema():
        row, second_key = api_key_create(tenant=alpha.tenant, name="voz", scope=ApiKey.Scope.CHANNEL)
    second_url = f"/api/v1/turns/{queued_turn(alpha, 'Hola', integration=row.integration).pk}/events"
    connection.set_schema_to_public()
    url = f"/api/v1/turns/{turn.pk}/events"
    first, second = alpha.api(alpha.channel_key), alpha.api(second_key)
    open_streams = [first.get(url), first.get(url)]
    refused = first.get(url)
    assert [r.status_code for r in open_streams] == [200, 200] and refused.status_code == 429, refused.content
    assert int(refused["Retry-After"]) >= 1
    open_streams.append(second.get(second_url))
    assert open_streams[-1].status_code == 200 and second.get(second_url).status_code == 429  # the tenant's 3
    other = queued_turn(beta, "Hola")
    connection.set_schema_to_public()
    beta_stream = beta.api(beta.channel_key).get(f"/api/v1/turns/{other.pk}/events")
    assert beta_stream.status_code == 200
    busy = beta.api(beta.channel_key).get(f"/api/v1/turns/{other.pk}/events")
    assert busy.status_code == 429  # this process has 4 open: its threads are kept for other requests
    closed(open_streams[0])
    reopened = first.get(url)
    assert reopened.status_code == 200
    for response in [*open_streams[1:], beta_stream, reopened]:
        closed(response)
    assert first.get(url).status_code == 200


def closed(response):
    """What the server does when a client leaves: the response's closers run (here without the
    request_finished signal, which would close the test's database connection)."""
    for closer in response._resource_closers:
        closer()


def test_the_dashboards_stream_is_bounded_and_a_finished_turns_ends_after_its_replay(alpha, beta, settings):
    """Issue 19 M3 ("same on the dashboard's /turns/<id>/events/"): a Last-Event-ID past a finished
    turn's reply ends the dashboard's stream at once (it held it open for the stream's deadline),
    and at most ASIXTO_STREAMS_PER_TENANT of its streams are open at once: 429 with Retry-After
    beyond, the slot given back when one closes; another tenant's dashboard is not counted."""
    settings.ASIXTO_EVENT_STREAM_SECONDS = 20
    settings.ASIXTO_STREAMS_PER_KEY, settings.ASIXTO_STREAMS_PER_TENANT, settings.ASIXTO_STREAMS_PER_PROCESS = 2, 2, 8
    finished = queued_turn(alpha, "Hola")
    with alpha.schema():
        reply = TurnEvent.objects.create(turn=finished, kind="reply", text="Listo").pk
    waiting_turn = queued_turn(alpha, "Hola")  # never finishes: its streams stay open until closed
    other = queued_turn(beta, "Hola")
    connection.set_schema_to_public()
    page = alpha.dashboard("ana")
    resumed = page.get(f"/turns/{finished.pk}/events/", HTTP_LAST_EVENT_ID=str(reply + 1000))
    assert read_stream(resumed) == []
    closed(resumed)
    open_streams = [page.get(f"/turns/{waiting_turn.pk}/events/") for _ in range(2)]
    refused = page.get(f"/turns/{waiting_turn.pk}/events/")
    assert [r.status_code for r in open_streams] == [200, 200] and refused.status_code == 429
    assert int(refused["Retry-After"]) >= 1
    theirs = beta.dashboard("ana").get(f"/turns/{other.pk}/events/")
    assert theirs.status_code == 200
    closed(open_streams[0])
    reopened = page.get(f"/turns/{waiting_turn.pk}/events/")
    assert reopened.status_code == 200
    for response in [*open_streams[1:], reopened, theirs]:
        closed(response)


def test_a_tenant_holding_its_streams_leaves_the_web_server_serving_health_and_other_tenants(
        committed_world, committed_other, django_db_blocker):
    """Issue 19 M3 (8 streams of one channel key stalled the whole web tier: health got no answer;
    "a web tier that keeps serving health and other tenants while one tenant holds its maximum"):
    gunicorn gthread with 6 threads, streams held open far longer than the test's ceiling. Tenant A
    opens streams of a turn that never finishes until it is refused (429 at its 2); the server
    then still answers /healthz, tenant B's stream and B's other requests while A's are open.
    Without the limits A's streams took every thread and the next request waited for them."""
    world, other = committed_world, committed_other
    env = {"ASIXTO_EVENT_STREAM_SECONDS": "900", "ASIXTO_STREAMS_PER_TENANT": "2", "ASIXTO_STREAMS_PER_PROCESS": "4"}
    with django_db_blocker.unblock():
        mine, theirs = queued_turn(world, "Hola"), queued_turn(other, "Hola")
        connection.set_schema_to_public()
        with wsgi_server(threads=6, **env) as url, httpx.Client(base_url=url, timeout=60) as client:
            def open_stream(key, turn):
                request = client.build_request("GET", f"/api/v1/turns/{turn.pk}/events", headers={"Authorization": f"Bearer {key}"})
                return client.send(request, stream=True)

            held = []
            try:
                while not held or held[-1].status_code == 200 and len(held) < 8:
                    held.append(open_stream(world.channel_key, mine))
                held.append(open_stream(other.channel_key, theirs))
                health = client.get("/healthz", headers={"Host": "localhost"})
                listed = client.get("/api/v1/conversations", headers={"Authorization": f"Bearer {other.channel_key}"})
            finally:
                for response in held:
                    response.close()
    assert [response.status_code for response in held] == [200, 200, 429, 200]
    assert health.status_code == 200 and listed.status_code == 200
