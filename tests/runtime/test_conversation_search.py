"""Conversation search (issue 20, A1, A2, T1): `q` finds conversations by customer reference
(phone, e-mail), channel name, or words of their messages (PostgreSQL full-text search in Spanish
and English, inflections included), with the other filters, in the API and the dashboard alike;
never a conversation of another tenant."""

import pytest
from django.db import connection

from runtime.models import Conversation, Message


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


def test_the_message_search_uses_an_index_per_language(alpha, cases):
    """Issue 20: the search reads GIN expression indexes (one per text-search config), so it
    stays fast on a large tenant (sequential scans off: the planner must be able to use them)."""
    from runtime.selectors import conversations

    with alpha.schema():
        sql, params = conversations(q="facturas").query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(f"EXPLAIN {sql}", params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "message_text_spanish_search" in plan and "message_text_english_search" in plan, plan
