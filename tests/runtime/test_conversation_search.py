"""Conversation search (issue 20, A1, A2, T1): `q` finds conversations by customer reference
(phone, e-mail), channel name, or words of their messages (PostgreSQL full-text search in Spanish
and English, inflections included, stop words kept), with the other filters, in the API and the
dashboard alike; never a conversation of another tenant. The configurations that keep stop words
exist in every tenant schema, migrated, cloned or predating them."""

import uuid

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import override_settings
from django_tenants.utils import schema_context

from runtime.models import Conversation, Message
from runtime.search import conversations_matching
from tenants.services import tenant_create


def conversation(world, *, text, customer_ref="", channel_name="web"):
    with world.schema():
        found = Conversation.objects.create(channel_kind="chat", channel_name=channel_name, language="es",
                                            customer_ref=customer_ref, integration=world.channel_integration)
        Message.objects.create(conversation=found, role="customer", text=text)
        Message.objects.create(conversation=found, role="agent", text="Con gusto le ayudo.")
        return str(found.pk)


@pytest.fixture
def cases(alpha, beta):
    ids = {
        "invoice": conversation(alpha, text="Necesito la factura de mayo, por favor", customer_ref="+57 300 555 1234"),
        "refund": conversation(alpha, text="I would like a refund for my last order", customer_ref="Ana.Gomez@Example.com",
                               channel_name="whatsapp"),
        "other": conversation(alpha, text="¿A qué hora abren mañana?", customer_ref="cliente-77"),
        # Another tenant with the same words: never found from alpha.
        "beta": conversation(beta, text="La factura y el refund de la orden", customer_ref="+57 300 555 1234",
                             channel_name="whatsapp"),
    }
    connection.set_schema_to_public()
    return ids


def api_search(world, query, **filters):
    response = world.api(world.channel_key).get("/api/v1/conversations", {"q": query, **filters})
    assert response.status_code == 200, response.content
    return {item["id"] for item in response.json()["results"]}


def dashboard_search(world, query, **filters):
    response = world.dashboard("sam").get("/conversations/", {"q": query, **filters})
    assert response.status_code == 200, response.content
    return {str(item.pk) for item in response.context["page"]}


@pytest.mark.parametrize("search", [api_search, dashboard_search], ids=["api", "dashboard"])
def test_it_finds_conversations_by_message_words_in_both_languages(alpha, beta, cases, search):
    """Issue 20, T1: "facturas" finds "factura" (Spanish), "refunds" finds "refund" (English),
    two words must both be there; the other tenant's conversation with the same words never shows."""
    assert search(alpha, "facturas") == {cases["invoice"]}
    assert search(alpha, "refunds") == {cases["refund"]}
    assert search(alpha, "factura mayo") == {cases["invoice"]}
    assert search(alpha, "factura junio") == set()
    assert search(alpha, '"por favor"') == {cases["invoice"]}
    assert search(beta, "facturas") == {cases["beta"]}


@pytest.mark.parametrize("search", [api_search, dashboard_search], ids=["api", "dashboard"])
def test_it_finds_conversations_by_customer_reference_and_channel(alpha, cases, search):
    """Issue 20: a piece of the phone or e-mail (any case) or of the channel name finds the conversation."""
    assert search(alpha, "555 1234") == {cases["invoice"]}
    assert search(alpha, "ana.gomez@example") == {cases["refund"]}
    assert search(alpha, "whats") == {cases["refund"]}
    assert search(alpha, "100% _") == set()  # LIKE wildcards are plain text


def test_the_search_combines_with_the_other_filters(alpha, cases):
    """Issue 20, A1, A2: `q` narrows what the existing filters keep, and the reverse."""
    assert api_search(alpha, "Con gusto") == {cases["invoice"], cases["refund"], cases["other"]}
    assert api_search(alpha, "Con gusto", channel_name="whatsapp") == {cases["refund"]}
    assert dashboard_search(alpha, "Con gusto", channel_name="web") == {cases["invoice"], cases["other"]}


@pytest.mark.parametrize("query", ["fact\x00ura", "x" * 201])
def test_a_nul_or_too_long_query_is_a_clear_400(alpha, cases, query):
    """A4, issue 20: a NUL character or more than 200 characters is refused with the field named."""
    response = alpha.api().get("/api/v1/conversations", {"q": query})
    assert response.status_code == 400, response.content
    assert "q" in response.json()["error"]["fields"]
    page = alpha.dashboard("sam").get("/conversations/", {"q": query}, HTTP_ACCEPT_LANGUAGE="es")
    assert page.status_code == 400
    assert list(page.context["page"]) == []


@pytest.mark.parametrize("query", ["facturas", "estado", "when"])
def test_the_message_search_uses_an_index_per_language(alpha, cases, query):
    """Issue 20: the search reads GIN expression indexes (one per text-search config, the configs
    that keep stop words), so it stays fast on a large tenant (sequential scans off: the planner
    must be able to use them), for a stop word as for any other word."""
    from runtime.selectors import conversations

    with alpha.schema():
        sql, params = conversations(q=query).query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(f"EXPLAIN {sql}", params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "message_text_spanish_nostop" in plan and "message_text_english_nostop" in plan, plan


STATUS_QUESTION = "¿Cuál es el estado de mi pedido?"
ENGLISH_QUESTION = "When will I hear more about it?"


@pytest.fixture
def stop_word_cases(alpha, cases):
    ids = {
        "status": conversation(alpha, text=STATUS_QUESTION),
        "english": conversation(alpha, text=ENGLISH_QUESTION),
        "nothing": conversation(alpha, text="No me ha llegado nada sobre el envío"),
    }
    connection.set_schema_to_public()
    return {**cases, **ids}


@pytest.mark.parametrize("search", [api_search, dashboard_search], ids=["api", "dashboard"])
def test_it_finds_words_that_are_stop_words(alpha, stop_word_cases, search):
    """Issue 20: a word on Spanish's or English's stop list is still a word a support agent looks
    for ("estado" is a form of "estar"; "no" and "me" are on both lists); it finds the messages
    that say it, inflections still match, and quotes, `or` and `-word` treat it as a word: a
    phrase must have it where it stands, and `-estado` leaves out the messages that say it."""
    cases = stop_word_cases
    assert search(alpha, "estado") == {cases["status"]}
    assert search(alpha, "Estados") == {cases["status"]}
    assert search(alpha, "sobre") == {cases["nothing"]}
    assert search(alpha, "nada") == {cases["nothing"]}
    assert search(alpha, "when") == {cases["english"]}
    assert search(alpha, "more") == {cases["english"]}
    assert search(alpha, "no") == {cases["nothing"]}
    assert search(alpha, "no me") == {cases["nothing"]}
    assert search(alpha, '"estado de mi pedido"') == {cases["status"]}
    assert search(alpha, '"estado de tu pedido"') == set()
    assert search(alpha, '"no te ha llegado"') == set()
    assert search(alpha, "estado or refunds") == {cases["status"], cases["refund"]}
    assert search(alpha, "pedido -estado") == set()
    assert search(alpha, "pedidos -envío") == {cases["status"]}
    assert search(alpha, "facturas") == {cases["invoice"]}


@pytest.mark.parametrize("search", [api_search, dashboard_search], ids=["api", "dashboard"])
def test_what_a_word_finds_its_exclusion_leaves_out(alpha, cases, search):
    """Issue 20 (found by exploratory testing): Spanish and English stem a word apart
    ("cancelaciones" is "cancel" in Spanish, "cancelaciones" in English; "cancelled" is "cancel" in
    English only), and an exclusion held in one language only: `pedidos -cancelaciones` still found
    the cancelled orders through the other. Now what "X" finds, "-X" leaves out."""
    cancelled = conversation(alpha, text="Tu pedido fue cancelado ayer")
    kept = conversation(alpha, text="El pedido llegó bien")
    english_cancel = conversation(alpha, text="Please cancel my order")
    english_arrived = conversation(alpha, text="My order arrived today")
    connection.set_schema_to_public()
    assert search(alpha, "cancelaciones") >= {cancelled}
    assert search(alpha, "pedidos -cancelaciones") == {kept}
    assert search(alpha, "cancelled") >= {english_cancel}
    assert search(alpha, "order -cancelled") == {english_arrived, cases["refund"]}
    assert search(alpha, 'pedido -"fue cancelado"') == {kept}
    assert search(alpha, "pedidos or -cancelaciones or") == {kept}


def test_a_query_of_stop_words_only_finds_and_sends_no_notice(alpha, stop_word_cases):
    """Issue 20: a query made only of stop words matched no message in a language whose list has
    them all, and PostgreSQL sent a NOTICE for it ("text-search query contains only stop words");
    now it is searched as words in both languages, with no notice."""
    notices = []

    def heard(diagnostic):
        notices.append(diagnostic.message_primary)

    connection.ensure_connection()
    connection.connection.add_notice_handler(heard)
    try:
        assert api_search(alpha, "de mi") == {stop_word_cases["status"]}
        assert api_search(alpha, "when more") == {stop_word_cases["english"]}
        assert api_search(alpha, "no me") == {stop_word_cases["nothing"]}
    finally:
        connection.connection.remove_notice_handler(heard)
    assert notices == []


def search_in(schema_name, query):
    with schema_context(schema_name):
        return {conversation.pk for conversation in conversations_matching(Conversation.objects.all(), q=query)}


def catalog(schema_name):
    """The message search indexes and the text-search configurations of a schema."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s AND indexname LIKE 'message_text_%%'"
                       " ORDER BY 1", [schema_name])
        indexes = [row[0] for row in cursor.fetchall()]
        cursor.execute("SELECT cfgname FROM pg_ts_config WHERE cfgnamespace = %s::regnamespace ORDER BY 1",
                       [schema_name])
        return indexes, [row[0] for row in cursor.fetchall()]


KEEPING_STOP_WORDS = (["message_text_english_nostop", "message_text_spanish_nostop"],
                      ["english_nostop", "spanish_nostop"])


@pytest.mark.parametrize("clone", [True, False], ids=["cloned", "migrated"])
def test_a_tenant_created_after_the_migration_searches_stop_words(db, clone):
    """Issue 20, T5: a new tenant, whether its schema is cloned from the template or migrated, has
    the text-search configurations that keep stop words and the indexes on them, and its search
    finds "estado" and "no"."""
    with override_settings(ASIXTO_TENANT_CLONE=clone):
        tenant = tenant_create(slug=f"late-{'cloned' if clone else 'migrated'}", name="Late").tenant
    assert catalog(tenant.schema_name) == KEEPING_STOP_WORDS
    with schema_context(tenant.schema_name):
        found = Conversation.objects.create(channel_kind="chat", language="es")
        Message.objects.create(conversation=found, role="customer", text=STATUS_QUESTION + " No llegó.")
    assert search_in(tenant.schema_name, "estado") == {found.pk}
    assert search_in(tenant.schema_name, "no") == {found.pk}
    assert search_in(tenant.schema_name, "when") == set()


def test_the_migration_rebuilds_the_indexes_of_an_existing_tenant(db):
    """Issue 20: on a database whose tenants predate it, `migrate_schemas` adds the configurations
    to each tenant schema and rebuilds the message indexes on them over the messages already
    there; unapplied, it puts back the indexes on the stock configurations."""
    schema = tenant_create(slug="existing", name="Existing").tenant.schema_name
    call_command("migrate_schemas", "runtime", "0010", schema_name=schema, interactive=False, verbosity=0)
    assert catalog(schema) == (["message_text_english_search", "message_text_spanish_search"], [])
    with schema_context(schema), connection.cursor() as cursor:
        # The tables as 0010 left them (the models have columns of later migrations): plain SQL.
        found = uuid.uuid4()
        cursor.execute("INSERT INTO runtime_conversation (id, channel_kind, channel_name, customer_ref, language, currency,"
                       " price_list_id, timezone, created_at, updated_at) VALUES (%s, 'chat', '', '', 'es', '', '', 'UTC',"
                       " now(), now())", [found])
        cursor.execute("INSERT INTO runtime_message (id, conversation_id, role, text, external_id, created_at)"
                       " VALUES (%s, %s, 'customer', 'No me ha llegado', '', now())", [uuid.uuid4(), found])
        # Check the deferred foreign keys now: a table with pending checks can get no index.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    call_command("migrate_schemas", schema_name=schema, interactive=False, verbosity=0)
    assert catalog(schema) == KEEPING_STOP_WORDS
    assert search_in(schema, "no me") == {found}
    assert search_in(schema, "llegados") == {found}
    assert search_in(schema, "facturas") == set()
