"""The playground (A2, R1, R9, T4): an admin talks to the agent through the channel service and
follows the turn's events live; support staff cannot use it; the page says how to configure a
model when there is none."""

import pytest
from django.db import connection

from asixto.celery import app
from runtime.models import Conversation, Turn
from tests.runtime.runtime_support import agent, post, run
from tests.support.faults import FaultyPeer
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, say
from tests.tools.gateway_support import certified_tool, ok_result


@pytest.fixture
def eager():
    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


def stream_text(response):
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    return b"".join(response.streaming_content).decode()


def test_an_admin_talks_to_the_agent_and_follows_the_events(alpha, eager, django_capture_on_commit_callbacks):
    """R1, R9, A2: the message goes through the channel service (a playground conversation, a
    queued turn run by the task); the dashboard's event stream carries the status, then the
    reply; a second message continues the same conversation."""
    peer = FaultyPeer([ok_result()])
    model = ScriptedModel([call("crm__buscar_producto", {"consulta": "router"}), say("ok"), say("Tenemos un router.")])
    client = alpha.dashboard("ana")
    with serve_asgi(peer.app()) as tool_url, serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1"):
        certified_tool(alpha, tool_url)
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post("/playground/messages/", {"text": "¿Tienen routers?", "channel_kind": "voice", "language": "es"})
        assert response.status_code == 202, response.content
        body = response.json()
        events = stream_text(client.get(body["events_url"]))
        calls = client.get(body["calls_url"], HTTP_ACCEPT_LANGUAGE="en").json()["calls"]  # issue 20: shown inline
        assert [(c["tool"], c["outcome"], c["outcome_label"]) for c in calls] == [("crm__buscar_producto", "ok", "ok")]
        assert calls[0]["url"].startswith("/calls/")
        assert "event: status" in events and "event: reply" in events and "Tenemos un router." in events
        assert events.index("event: status") < events.index("event: reply")
        with alpha.schema():
            turn = Turn.objects.select_related("conversation", "reply").get(pk=body["turn"])
            assert (turn.conversation.channel_name, turn.conversation.channel_kind) == ("playground", "voice")
            assert turn.status == "done" and turn.reply.text == "Tenemos un router." and turn.api_key_id is None
        with django_capture_on_commit_callbacks(execute=True):
            again = client.post("/playground/messages/", {"text": "Gracias", "conversation": body["conversation"]})
        assert again.status_code == 202 and again.json()["conversation"] == body["conversation"]
    assert client.get(body["conversation_url"]).status_code == 200
    resumed = stream_text(client.get(body["events_url"], HTTP_LAST_EVENT_ID=events.split("id: ")[1].split("\n")[0]))
    assert "event: status" not in resumed and "event: reply" in resumed  # Last-Event-ID resumes after it


def test_the_page_says_how_to_set_a_model_when_there_is_none(alpha):
    """A2, T6: without a model endpoint the playground shows how to set one (./run's variables and
    the settings page); with one, it does not."""
    with agent(alpha, ""):
        html = alpha.dashboard("ana").get("/playground/").content.decode()
    assert "ASIXTO_MODEL_URL" in html and "ASIXTO_MODEL_NAME" in html and 'href="/settings/"' in html
    with agent(alpha, "http://127.0.0.1:9/v1"):
        html = alpha.dashboard("ana").get("/playground/").content.decode()
    assert "ASIXTO_MODEL_URL" not in html and 'id="say"' in html


def test_support_staff_and_visitors_cannot_use_it(alpha):
    """T4: support gets 403 on the page and on posting, and nothing is stored; anonymous visitors
    go to the login page."""
    support = alpha.dashboard("sam")
    assert support.get("/playground/").status_code == 403
    assert support.post("/playground/messages/", {"text": "hola"}).status_code == 403
    anonymous = alpha.dashboard().post("/playground/messages/", {"text": "hola"})
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    with alpha.schema():
        assert not Conversation.objects.exists()


@pytest.mark.parametrize("data, field", [
    ({"text": ""}, "text"), ({"text": "   "}, "text"), ({"text": "x" * 4001}, "text"),
    ({"text": "hola", "conversation": "nope"}, "conversation"), ({"text": "hola", "channel_kind": "fax"}, "channel_kind"),
    ({"text": "hola", "language": "español!"}, "language"),
])
def test_bad_input_gets_a_clear_error(alpha, data, field):
    """A4: 400 with the field named, nothing stored."""
    response = alpha.dashboard("ana").post("/playground/messages/", data)
    assert response.status_code == 400 and field in response.json()["error"]["fields"]
    with alpha.schema():
        assert not Conversation.objects.exists()


def test_it_never_posts_into_a_customers_or_another_tenants_conversation(alpha, beta):
    """T1: a conversation id of another tenant, or of a real channel, is a 404; nothing is stored."""
    customer = post(alpha, "Hola").conversation_id
    theirs = post(beta, "Hola").conversation_id
    connection.set_schema_to_public()
    client = alpha.dashboard("ana")
    for conversation in (customer, theirs):
        assert client.post("/playground/messages/", {"text": "prueba", "conversation": conversation}).status_code == 404
    with alpha.schema():
        assert Turn.objects.count() == 1
    with beta.schema():
        assert Turn.objects.count() == 1


def test_the_event_stream_is_for_this_tenants_signed_in_users(alpha, beta):
    """T1, T4: B's turn is a 404 on A's domain; support staff may watch A's turn; visitors may not;
    the list of a turn's tool calls is for A's admins."""
    with agent(alpha, ""), agent(beta, ""):
        mine = run(alpha, post(alpha, "Hola"))
        theirs = run(beta, post(beta, "Hola"))
    connection.set_schema_to_public()
    assert alpha.dashboard("ana").get(f"/turns/{theirs.pk}/events/").status_code == 404
    assert "event: reply" in stream_text(alpha.dashboard("sam").get(f"/turns/{mine.pk}/events/"))
    assert alpha.dashboard().get(f"/turns/{mine.pk}/events/").status_code == 302
    # The turn's tool calls (issue 20): this tenant's admins only.
    assert alpha.dashboard("ana").get(f"/turns/{theirs.pk}/calls/").status_code == 404
    assert alpha.dashboard("ana").get(f"/turns/{mine.pk}/calls/").json() == {"calls": []}
    assert alpha.dashboard("sam").get(f"/turns/{mine.pk}/calls/").status_code == 403


def test_the_playground_takes_its_turns_within_the_tenants_fair_share(alpha, settings):
    """Issue 19 M4 (found by a security review): the playground posted past the tenant's turns in
    flight (260 at once held every worker slot). Past the limit it answers 429 with Retry-After,
    and stores nothing."""
    settings.ASIXTO_TURNS_IN_FLIGHT_LIMIT = 1
    client = alpha.dashboard("ana")
    assert client.post("/playground/messages/", {"text": "uno"}).status_code == 202
    refused = client.post("/playground/messages/", {"text": "dos"})
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert refused.json()["error"]["code"] == "throttled"
    with alpha.schema():
        assert Turn.objects.count() == 1
