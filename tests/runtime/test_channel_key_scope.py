"""A channel key reads and posts only the conversations its integration started (T2, R1, A1): the
key and the keys rotated from it. Two integrations of one tenant (a web chat and a voice gateway)
never see each other's customers; an admin key and the dashboard see every conversation."""

import pytest
from django.utils import timezone
from django.db import connection

from runtime.models import Conversation, Turn
from tenants.models import ApiKey
from tenants.services import api_key_create
from tests.runtime.test_channel_api import send, start


def say(world, key, conversation, text):
    response = send(world.api(key), conversation["messages_url"], {"text": text})
    assert response.status_code == 202, response.content
    return response.json()


@pytest.fixture
def voice_key(alpha):
    """A second channel integration of the same tenant."""
    _key, plaintext = api_key_create(tenant=alpha.tenant, name="voice gateway", scope=ApiKey.Scope.CHANNEL)
    return plaintext


def test_another_integration_of_the_tenant_gets_404_on_every_path(alpha, voice_key):
    """T2, R1: the chat key's conversation, its messages, its turn and the turn's events are 404
    for the voice key, a message posted with it is refused and stores nothing; the chat key and
    the admin key still read them."""
    conversation = start(alpha, alpha.channel_key, customer_ref="+573001234567")
    turn = say(alpha, alpha.channel_key, conversation, "Mi número de cédula es 1020304050")
    voice = alpha.api(voice_key)
    for url in (f"/api/v1/conversations/{conversation['id']}", conversation["messages_url"], turn["url"]):
        assert voice.get(url).status_code == 404, url
        assert alpha.api(alpha.channel_key).get(url).status_code == 200, url
        assert alpha.api().get(url).status_code == 200, url
    assert voice.get(turn["events_url"], HTTP_ACCEPT="text/event-stream").status_code == 404
    assert send(voice, conversation["messages_url"], {"text": "¿y mi saldo?"}).status_code == 404
    with alpha.schema():
        assert Turn.objects.filter(conversation_id=conversation["id"]).count() == 1


def test_lists_and_searches_show_a_channel_key_only_its_own(alpha, voice_key):
    """T2, issue 20: the list, its filters and the search give a channel key only its
    integration's conversations; the admin key gets both."""
    chat = start(alpha, alpha.channel_key, customer_ref="cliente-chat")
    say(alpha, alpha.channel_key, chat, "quiero saber el estado de la factura")
    voice = start(alpha, voice_key, customer_ref="cliente-voz", channel_kind="voice")
    say(alpha, voice_key, voice, "quiero saber el estado de la factura")

    def ids(key, query=""):
        response = alpha.api(key).get(f"/api/v1/conversations{query}")
        assert response.status_code == 200, response.content
        return {row["id"] for row in response.json()["results"]}

    assert ids(alpha.channel_key) == {chat["id"]} and ids(voice_key) == {voice["id"]}
    assert ids(voice_key, "?q=factura") == {voice["id"]}
    assert ids(voice_key, "?customer_ref=cliente-chat") == set()
    assert ids(alpha.admin_key) >= {chat["id"], voice["id"]}


def test_a_rotated_key_keeps_its_integrations_conversations(alpha):
    """T2, issue 20: the key a rotation makes reads and posts to the conversations its
    predecessor started; the old key, revoked, opens nothing."""
    conversation = start(alpha, alpha.channel_key)
    old_id = ApiKey.objects.get(key_hash=ApiKey.hash(alpha.channel_key)).pk
    response = send(alpha.api(), f"/api/v1/api-keys/{old_id}/rotate", {})
    assert response.status_code == 201, response.content
    new_key = response.json()["key"]
    assert alpha.api(new_key).get(f"/api/v1/conversations/{conversation['id']}").status_code == 200
    assert send(alpha.api(new_key), conversation["messages_url"], {"text": "hola otra vez"}).status_code == 202
    assert alpha.api(alpha.channel_key).get(f"/api/v1/conversations/{conversation['id']}").status_code == 401


def test_a_conversation_without_an_integration_is_for_admin_keys_and_the_dashboard(alpha):
    """T2: a conversation no integration started (the playground's, or an old one never posted to
    through the API) is 404 for channel keys, there for the admin key and the dashboard."""
    with alpha.schema():
        conversation = Conversation.objects.create(channel_name="playground", language="es")
    url = f"/api/v1/conversations/{conversation.pk}"
    assert alpha.api(alpha.channel_key).get(url).status_code == 404
    assert alpha.api().get(url).status_code == 200
    page = alpha.dashboard(alpha.support_username).get(f"/conversations/{conversation.pk}/")
    assert page.status_code == 200


def test_the_migration_gives_old_conversations_the_integration_of_their_first_post(alpha):
    """T2: conversations stored before integrations were recorded take the integration of the key
    that posted their first message through the API, a channel key's before an admin key's (the
    migration's statement, run here on them); one never posted to through the API keeps none."""
    from importlib import import_module

    fill = import_module("runtime.migrations.0012_conversation_integration").FILL
    chat = start(alpha, alpha.channel_key)
    say(alpha, alpha.admin_key, chat, "una prueba del administrador, antes")  # the channel's post wins
    say(alpha, alpha.channel_key, chat, "primero")
    empty = start(alpha, alpha.channel_key)
    with alpha.schema():
        Conversation.objects.filter(pk__in=[chat["id"], empty["id"]]).update(integration=None)
        with connection.cursor() as cursor:
            cursor.execute(fill)
        stored = dict(Conversation.objects.filter(pk__in=[chat["id"], empty["id"]]).values_list("pk", "integration"))
    chat_key = ApiKey.objects.get(key_hash=ApiKey.hash(alpha.channel_key))
    assert {str(pk): value for pk, value in stored.items()} == {chat["id"]: chat_key.integration, empty["id"]: None}
    assert alpha.api(alpha.channel_key).get(f"/api/v1/conversations/{chat['id']}").status_code == 200


def test_a_new_key_continues_an_integration_whose_keys_were_all_revoked(alpha):
    """T2 (found by exploratory testing): once an integration's only key is revoked or expired it
    cannot be rotated, and a new key started a new integration: the channel lost its customers'
    conversations for good. A new channel key given that integration reads and posts to them."""
    conversation = start(alpha, alpha.channel_key)
    old = ApiKey.objects.get(key_hash=ApiKey.hash(alpha.channel_key))
    assert alpha.api().delete(f"/api/v1/api-keys/{old.pk}").status_code == 200
    created = send(alpha.api(), "/api/v1/api-keys", {"name": "chat 2", "scope": "channel", "integration": str(old.integration)})
    assert created.status_code == 201 and created.json()["integration"] == str(old.integration), created.content
    new_key = created.json()["key"]
    assert alpha.api(new_key).get(f"/api/v1/conversations/{conversation['id']}").status_code == 200
    assert send(alpha.api(new_key), conversation["messages_url"], {"text": "sigo aquí"}).status_code == 202


def test_an_integration_is_continued_only_by_a_channel_key_of_the_same_account(alpha, beta):
    """T1, T2, A4: an admin key's integration, another tenant's, an unknown one, or an admin key
    asking for one: 400 naming `integration`, and no key is made."""
    admin_key = ApiKey.objects.get(key_hash=ApiKey.hash(alpha.admin_key))
    theirs = ApiKey.objects.get(key_hash=ApiKey.hash(beta.channel_key))
    count = ApiKey.objects.count()
    for scope, integration in (("channel", admin_key.integration), ("channel", theirs.integration),
                               ("channel", "3f1e2d4c-0000-4000-8000-000000000000"), ("admin", alpha.channel_integration)):
        response = send(alpha.api(), "/api/v1/api-keys", {"name": "x", "scope": scope, "integration": str(integration)})
        assert response.status_code == 400 and "integration" in response.json()["error"]["fields"], response.content
    assert ApiKey.objects.count() == count


def test_the_dashboard_makes_a_key_for_an_earlier_integration(alpha):
    """T2, issue 20: the API keys page offers the account's channel integrations, named by their
    newest key; the key made continues the chosen one."""
    client = alpha.dashboard("ana")
    page = client.get("/api-keys/").content.decode()
    assert str(alpha.channel_integration) in page
    response = client.post("/api-keys/", {"name": "chat 2", "scope": "channel", "integration": str(alpha.channel_integration)})
    assert response.status_code == 200
    made = ApiKey.objects.get(tenant=alpha.tenant, name="chat 2")
    assert made.integration == alpha.channel_integration


def test_a_channels_conversation_named_playground_gets_no_playground_message(alpha):
    """T2 (found by exploratory testing): the playground posts only into its own conversations; a
    channel's conversation named "playground" is a 404 and gets nothing."""
    conversation = start(alpha, alpha.channel_key, channel_name="playground")
    response = alpha.dashboard("ana").post("/playground/messages/", {"text": "prueba", "conversation": conversation["id"]})
    assert response.status_code == 404
    with alpha.schema():
        assert not Turn.objects.filter(conversation_id=conversation["id"]).exists()


def test_the_conversation_page_names_the_integration_that_started_it(alpha):
    """T2 (exploratory test: an admin could not see why a channel key got a 404): the page names
    the integration's newest key, and says when none of its keys is active any more."""
    conversation = start(alpha, alpha.channel_key)
    key = ApiKey.objects.get(key_hash=ApiKey.hash(alpha.channel_key))
    page = alpha.dashboard(alpha.support_username).get(f"/conversations/{conversation['id']}/", HTTP_ACCEPT_LANGUAGE="en")
    text = page.content.decode()
    assert key.prefix in text and "no active key" not in text
    ApiKey.objects.filter(pk=key.pk).update(revoked_at=timezone.now())
    text = alpha.dashboard(alpha.support_username).get(f"/conversations/{conversation['id']}/",
                                                         HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert key.prefix in text and "no active key" in text
