"""The channel API (R1, A1, A4): conversations, messages answered with 202 and the turn, the same
external_id returning the first turn (also under concurrent posts), the turn's detail."""

import json
import threading

import pytest
from django.db import connection

from asixto.celery import app
from runtime.models import Conversation, Message, Turn
from runtime.turn import failure_reply
from tests.isolation import IsolationContract
from tests.runtime.runtime_support import CHANNEL_DEFAULTS, agent, post, run
from tests.support.faults import FaultyPeer
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, say
from tests.tools.gateway_support import certified_tool, ok_result


def send(client, url, body):
    return client.post(url, json.dumps(body), content_type="application/json")


def start(world, key=None, **values):
    response = send(world.api(key or world.channel_key), "/api/v1/conversations", {**CHANNEL_DEFAULTS, **values})
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def eager():
    """Queued turns run at once, in the posting thread (no worker in these tests)."""
    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = before


def test_it_starts_a_conversation_with_the_channels_context(alpha):
    """R1, A1: a channel key starts a conversation with its kind, name, customer, language,
    currency, price list and timezone; the language defaults to the tenant's."""
    body = start(alpha, channel_kind="voice", currency="usd", language="")
    assert (body["channel_kind"], body["channel_name"], body["currency"], body["timezone"]) == (
        "voice", "whatsapp", "USD", "America/Bogota")
    assert body["language"] == alpha.tenant.language and body["messages_url"] == f"/api/v1/conversations/{body['id']}/messages"
    with alpha.schema():
        assert Conversation.objects.get(pk=body["id"]).customer_ref == "cliente-7"


@pytest.mark.parametrize("changes, field", [
    ({"channel_kind": "fax"}, "channel_kind"),
    ({"timezone": "Mars/Olympus"}, "timezone"),
    ({"timezone": "../../etc/passwd"}, "timezone"),
    ({"currency": "PESOS"}, "currency"),
    ({"language": "español!"}, "language"),
    ({"channel_name": "WhatsApp Business"}, "channel_name"),
    ({"color": "blue"}, "color"),
])
def test_it_refuses_a_bad_conversation_with_a_clear_error(alpha, changes, field):
    """A4: each bad field is named; nothing is stored."""
    response = send(alpha.api(alpha.channel_key), "/api/v1/conversations", {**CHANNEL_DEFAULTS, **changes})
    assert response.status_code == 400 and field in response.json()["error"]["fields"]
    with alpha.schema():
        assert not Conversation.objects.exists()


def test_it_accepts_a_message_at_once_and_queues_the_turn_after_the_commit(alpha, django_capture_on_commit_callbacks, eager):
    """R1, A1: 202 at once with the turn id and its URLs; the turn is queued only when the
    message and the turn are committed (an on-commit callback), and that task runs the turn."""
    conversation = start(alpha)
    with django_capture_on_commit_callbacks() as callbacks:
        response = send(alpha.api(alpha.channel_key), conversation["messages_url"], {"text": "Hola", "external_id": "wa-1"})
        assert response.status_code == 202, response.content
        with alpha.schema():
            assert Turn.objects.get(pk=response.json()["id"]).status == "queued"
    body = response.json()
    assert len(callbacks) == 1 and body["status"] == "queued" and body["duplicate"] is False
    assert body["url"] == f"/api/v1/turns/{body['id']}" and body["events_url"] == f"/api/v1/turns/{body['id']}/events"
    assert body["conversation"] == conversation["id"] and body["message"]["external_id"] == "wa-1"
    with alpha.schema():
        callbacks[0]()  # what the commit does, in the request's schema: send the task (eager here: it runs)
    connection.set_schema_to_public()
    turn = alpha.api(alpha.channel_key).get(body["url"]).json()
    assert turn["status"] == "failed" and turn["error"]["code"] == "model_not_configured"
    assert turn["reply"]["text"] == failure_reply(conversation["language"])


def test_the_same_external_id_returns_the_first_turn(alpha):
    """A1: a channel retrying its post gets the first turn back; one message is stored. The same
    external_id with another text is a 409 that stores nothing: a channel reusing its ids must not
    lose a customer's message to a silent "duplicate"."""
    conversation = start(alpha)
    client = alpha.api(alpha.channel_key)
    first = send(client, conversation["messages_url"], {"text": "Hola", "external_id": "wa-9"}).json()
    again = send(client, conversation["messages_url"], {"text": "Hola", "external_id": "wa-9"})
    assert again.status_code == 202 and again.json()["id"] == first["id"] and again.json()["duplicate"] is True
    reused = send(client, conversation["messages_url"], {"text": "Hola otra vez", "external_id": "wa-9"})
    assert reused.status_code == 409 and reused.json()["error"]["code"] == "external_id_conflict"
    other = send(client, conversation["messages_url"], {"text": "Otra cosa", "external_id": "wa-10"}).json()
    assert other["id"] != first["id"]
    with alpha.schema():
        assert Message.objects.filter(conversation_id=conversation["id"]).count() == 2
    # Issue 19 (a surviving mutant): the same external_id in another conversation is another message.
    elsewhere = start(alpha)
    there = send(client, elsewhere["messages_url"], {"text": "Hola", "external_id": "wa-9"}).json()
    assert there["id"] != first["id"] and there["duplicate"] is False


def test_ten_concurrent_posts_of_one_external_id_make_one_turn(committed_world, django_db_blocker, eager):
    """A1, R1: ten posts of the same message at once (the channel's own retries racing): one
    message, one turn, and every answer names that turn."""
    with django_db_blocker.unblock():
        conversation = start(committed_world)
        barrier, answers = threading.Barrier(10), []

        def post_once():
            client = committed_world.api(committed_world.channel_key)
            barrier.wait(30)
            answers.append(send(client, conversation["messages_url"], {"text": "Hola", "external_id": "wa-race"}))
            connection.close()

        threads = [threading.Thread(target=post_once) for _ in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert [a.status_code for a in answers] == [202] * 10, [a.content for a in answers if a.status_code != 202]
        assert len({a.json()["id"] for a in answers}) == 1
        assert sorted(a.json()["duplicate"] for a in answers) == [False] + [True] * 9
        with committed_world.schema():
            assert Message.objects.filter(conversation_id=conversation["id"], role="customer").count() == 1
            assert Turn.objects.count() == 1
        connection.set_schema_to_public()


@pytest.mark.parametrize("body, field", [
    ({"text": ""}, "text"),
    ({"text": "   "}, "text"),
    ({"text": "x" * 4001}, "text"),
    ({}, "text"),
    ({"text": "hola", "external_id": "e" * 201}, "external_id"),
    ({"text": "hola", "role": "agent"}, "role"),
])
def test_it_refuses_a_bad_message_with_a_clear_error(alpha, body, field):
    """A4: empty, blank, too long, unknown fields: 400 naming the field; nothing stored."""
    conversation = start(alpha)
    response = send(alpha.api(alpha.channel_key), conversation["messages_url"], body)
    assert response.status_code == 400 and field in response.json()["error"]["fields"]
    with alpha.schema():
        assert not Message.objects.exists()


def test_a_number_json_cannot_hold_is_a_clear_400_and_nothing_is_stored(alpha):
    """Issue 19 (low), A4: `1e999` parses as infinity, which no column and no JSON answer can hold:
    a 400 naming the field, not a 500, on a message and on a new conversation."""
    conversation = start(alpha)
    client = alpha.api(alpha.channel_key)
    response = client.post(conversation["messages_url"], '{"text": 1e999}', content_type="application/json")
    assert response.status_code == 400 and "text" in response.json()["error"]["fields"], response.content
    started = client.post("/api/v1/conversations", '{"channel_kind": "chat", "customer_ref": -1e999}',
                          content_type="application/json")
    assert started.status_code == 400 and "customer_ref" in started.json()["error"]["fields"], started.content
    with alpha.schema():
        assert not Message.objects.exists() and Conversation.objects.count() == 1


def test_a_post_that_fails_stores_nothing(committed_world, django_db_blocker):
    """Issue 19 ("POST …/messages can answer 500 after the message and turn were committed";
    "nothing after a commit can turn a success into a 500"): the conversation's `updated_at` is
    written in the message's own transaction. PostgreSQL refuses that write here (a trigger): the
    post is an error and neither the message nor its turn was stored, so the customer's retry is
    not a second turn. With the write after the commit, both were stored behind the 500."""
    world = committed_world
    with django_db_blocker.unblock():
        conversation = start(world)
        with world.schema(), connection.cursor() as cursor:
            cursor.execute("CREATE FUNCTION refuse_update() RETURNS trigger LANGUAGE plpgsql AS"
                           " $$ BEGIN RAISE EXCEPTION 'no update'; END $$")
            cursor.execute("CREATE TRIGGER refuse_update BEFORE UPDATE ON runtime_conversation"
                           " FOR EACH ROW EXECUTE FUNCTION refuse_update()")
        connection.set_schema_to_public()
        client = world.api(world.channel_key)
        client.raise_request_exception = False
        failed = send(client, conversation["messages_url"], {"text": "Hola"})
        with world.schema():
            stored = (Message.objects.filter(role="customer").count(), Turn.objects.count())
            with connection.cursor() as cursor:
                cursor.execute("DROP TRIGGER refuse_update ON runtime_conversation")
        connection.set_schema_to_public()
        retried = send(client, conversation["messages_url"], {"text": "Hola"})
        with world.schema():
            after_retry = (Message.objects.filter(role="customer").count(), Turn.objects.count())
        connection.set_schema_to_public()
    assert failed.status_code >= 500 and stored == (0, 0), (failed.status_code, stored)
    assert retried.status_code == 202 and after_retry == (1, 1)


@pytest.mark.parametrize("name", ["customer_ref", "channel_name"])
def test_a_conversation_filter_with_a_nul_is_a_clear_400(alpha, name):
    """Issue 19 (low), A4: a NUL in a filter PostgreSQL cannot compare with: 400 naming it."""
    start(alpha)
    response = alpha.api(alpha.channel_key).get("/api/v1/conversations", {name: "cliente\x007"})
    assert response.status_code == 400 and name in response.json()["error"]["fields"], response.content
    assert alpha.api(alpha.channel_key).get("/api/v1/conversations", {name: "cliente-7"}).status_code == 200


def test_it_answers_a_body_that_is_not_json_with_400(alpha):
    """A4: malformed JSON is a clear 400, never a 500."""
    conversation = start(alpha)
    response = alpha.api(alpha.channel_key).post(conversation["messages_url"], "{text:", content_type="application/json")
    assert response.status_code == 400 and response.json()["error"]["code"] == "parse_error"


def test_the_turn_shows_status_events_reply_tool_calls_and_truncations(alpha):
    """A1, R4, R9, G9: GET /turns/{id} has the status, the events, the reply, the gateway's call
    records and the truncations of the turn."""
    peer = FaultyPeer([ok_result(text="Router " + "x" * 400)])
    model = ScriptedModel([call("crm__buscar_producto", {"consulta": "router"}), say("ok"), say("Hay un router.")])
    with serve_asgi(peer.app()) as tool_url, serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1", result_budget=200):
        certified_tool(alpha, tool_url)
        turn = run(alpha, post(alpha, "¿Router?"))
    connection.set_schema_to_public()
    body = alpha.api(alpha.channel_key).get(f"/api/v1/turns/{turn.pk}").json()
    assert body["status"] == "done" and body["reply"]["text"] == "Hay un router." and body["error"] is None
    assert body["message"]["text"] == "¿Router?" and body["iterations"] == 2 and body["runs"] == 1
    assert [e["kind"] for e in body["events"]] == ["status", "reply"]
    assert [(c["tool_name"], c["outcome"], c["truncated"]) for c in body["tool_calls"]] == [("crm__buscar_producto", "ok", True)]
    assert [(t["tool_name"], t["kind"]) for t in body["truncations"]] == [("crm__buscar_producto", "result")]
    messages = alpha.api(alpha.channel_key).get(f"/api/v1/conversations/{turn.conversation_id}/messages").json()
    assert [(m["role"], m["turn"]) for m in messages["results"]] == [("customer", str(turn.pk)), ("agent", str(turn.pk))]


def test_truncation_logs_are_listed_and_filtered_for_admins(alpha):
    """R4, A1: admins list truncation logs, filtered by tool, kind, turn and time; bad filters are 400."""
    peer = FaultyPeer([ok_result(text="Router " + "x" * 400)])
    model = ScriptedModel([call("crm__buscar_producto", {"consulta": "router"}), say("ok"), say("Hay.")])
    with serve_asgi(peer.app()) as tool_url, serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1", result_budget=200):
        certified_tool(alpha, tool_url)
        turn = run(alpha, post(alpha, "¿Router?"))
    connection.set_schema_to_public()
    client = alpha.api()
    listed = client.get("/api/v1/truncation-logs?tool=crm__buscar_producto&kind=result").json()
    assert listed["count"] == 1 and listed["results"][0]["turn"] == str(turn.pk)
    assert listed["results"][0]["original_chars"] > listed["results"][0]["kept_chars"]
    assert client.get("/api/v1/truncation-logs?kind=turn").json()["count"] == 0
    assert client.get("/api/v1/truncation-logs?since=2999-01-01T00:00:00Z").json()["count"] == 0
    assert client.get(f"/api/v1/truncation-logs?turn={turn.pk}").json()["count"] == 1
    bad = client.get("/api/v1/truncation-logs?kind=huge&since=yesterday")
    assert bad.status_code == 400 and {"kind", "since"} <= set(bad.json()["error"]["fields"])


def test_channel_keys_reach_only_the_channel_endpoints(alpha):
    """T3: a channel key gets 403 on admin endpoints (old and new); those still work for admin keys."""
    channel, admin = alpha.api(alpha.channel_key), alpha.api()
    for url in ("/api/v1/servers", "/api/v1/tools", "/api/v1/tool-calls", "/api/v1/tenant", "/api/v1/api-keys",
                "/api/v1/truncation-logs"):
        assert channel.get(url).status_code == 403, url
        assert admin.get(url).status_code == 200, url
    assert admin.get("/api/v1/conversations").status_code == 200


def test_the_schema_documents_the_channel_api(alpha):
    """A1: the new endpoints are in the OpenAPI schema."""
    paths = alpha.api(key="").get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    for path in ("/api/v1/conversations", "/api/v1/conversations/{id}/messages", "/api/v1/turns/{id}",
                 "/api/v1/turns/{id}/events", "/api/v1/truncation-logs"):
        assert path in paths, path


def make_conversation(world):
    with world.schema():
        return Conversation.objects.create(language="es", integration=world.channel_integration).pk


def make_turn(world):
    with world.schema(), agent(world, ""):
        turn = post(world, "Hola")
    return run(world, turn).pk


class TestConversationIsolation(IsolationContract):
    list_url = "/api/v1/conversations"
    detail_url = "/api/v1/conversations/{id}"
    admin_only = False

    def make_object(self, world):
        return make_conversation(world)


class TestMessagesIsolation(IsolationContract):
    detail_url = "/api/v1/conversations/{id}/messages"
    admin_only = False

    def make_object(self, world):
        return make_conversation(world)

    def test_it_answers_404_to_a_post_into_another_tenants_conversation(self, alpha, beta):
        """T1, T2: A's channel key cannot post into B's conversation; nothing is stored in B."""
        url = self.detail_url.format(id=self.make_object(beta))
        connection.set_schema_to_public()
        response = send(alpha.api(alpha.channel_key), url, {"text": "hola"})
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
        with beta.schema():
            assert not Message.objects.exists()


class TestTurnIsolation(IsolationContract):
    detail_url = "/api/v1/turns/{id}"
    admin_only = False

    def make_object(self, world):
        return make_turn(world)


class TestTurnEventsIsolation(IsolationContract):
    detail_url = "/api/v1/turns/{id}/events"
    admin_only = False

    def make_object(self, world):
        return make_turn(world)


class TestTruncationLogIsolation(IsolationContract):
    list_url = "/api/v1/truncation-logs"

    def make_object(self, world):
        from runtime.models import TruncationLog

        turn_id = make_turn(world)
        with world.schema():
            turn = Turn.objects.get(pk=turn_id)
            log = TruncationLog.objects.create(turn=turn, conversation_id=turn.conversation_id, kind="result",
                                               tool_name=f"t__{turn_id.hex}", original_chars=10, kept_chars=5)
        return log.tool_name
