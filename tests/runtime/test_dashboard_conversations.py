"""Conversations in the dashboard (A2, T1, T4): a filtered, paginated list, and a conversation's
page with its turns — messages, status events, tool calls linked to their records, truncations,
errors — for admins and support staff alike; nothing of another tenant."""

from datetime import timedelta

from django.db import connection
from django.utils import timezone

from runtime.models import Conversation, Turn
from tests.runtime.runtime_support import agent, post, run
from tests.support.faults import FaultyPeer
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, say
from tests.tools.gateway_support import certified_tool, ok_result
from tools.models import ToolCall


def test_the_conversation_page_shows_everything_that_happened_in_its_turns(alpha):
    """A2, R4, R9, G9: messages, the status event, the tool call (linked to its record), the
    truncation, the reply; a failed turn's error; read by support staff."""
    peer = FaultyPeer([ok_result(text="Router " + "x" * 400)])
    model = ScriptedModel([call("crm__buscar_producto", {"consulta": "router"}), say("ok"), say("Hay un router AX-55.")])
    with serve_asgi(peer.app()) as tool_url, serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1", result_budget=200):
        certified_tool(alpha, tool_url)
        turn = run(alpha, post(alpha, "¿Tienen routers?", external_id="wa-123"))
    with agent(alpha, ""):
        with alpha.schema():
            conversation = Conversation.objects.get(pk=turn.conversation_id)
        failed = run(alpha, post(alpha, "¿Y envíos?", conversation=conversation))
    with alpha.schema():
        record = ToolCall.objects.get(turn_id=turn.pk)
    connection.set_schema_to_public()
    page = alpha.dashboard("sam").get(f"/conversations/{turn.conversation_id}/")
    assert page.status_code == 200
    html = page.content.decode()
    for expected in ("¿Tienen routers?", "wa-123", "Hay un router AX-55.", f'href="/calls/{record.pk}/"',
                     "crm__buscar_producto", "¿Y envíos?", "model_not_configured", f'id="turn-{failed.pk}"', "whatsapp"):
        assert expected in html, expected
    assert html.index("¿Tienen routers?") < html.index("¿Y envíos?")  # oldest turn first
    with alpha.schema():
        status_text = turn.events.get(kind="status").text
        cut = turn.truncations.get()
    assert status_text in html and f"{cut.original_chars} → {cut.kept_chars}" in html
    # The model requests each turn sent, as usage counts them (found by exploratory testing: the page
    # showed the loop's iterations, 2 here): the call, the answer after the tool, the reply; none
    # for the turn with no model configured.
    assert [view.model_requests for view in page.context["turns"]] == [3, 0]
    assert [view.turn.iterations for view in page.context["turns"]][0] == 2
    assert alpha.dashboard("sam").get(f"/calls/{record.pk}/").status_code == 200  # the link leads somewhere


def make_conversation(world, *, kind="chat", name="whatsapp", status=None, days_ago=0, text="Hola"):
    with world.schema():
        conversation = Conversation.objects.create(channel_kind=kind, channel_name=name, language="es", customer_ref=text)
        if status:
            from runtime.models import Message

            message = Message.objects.create(conversation=conversation, role="customer", text=text)
            Turn.objects.create(conversation=conversation, message=message, status=status)
        when = timezone.now() - timedelta(days=days_ago)
        Conversation.objects.filter(pk=conversation.pk).update(created_at=when, updated_at=when)
        return conversation


def listed(world, query="", user="sam"):
    response = world.dashboard(user).get(f"/conversations/?{query}")
    assert response.status_code == 200
    return {str(c.pk) for c in response.context["page"]}


def test_it_filters_conversations_by_channel_status_and_date(alpha):
    """A2: channel kind, channel name, turn status and a date range each narrow the list."""
    web = make_conversation(alpha, name="web", status="done", text="web-done")
    voice = make_conversation(alpha, kind="voice", name="telefono", status="failed", text="voice-failed")
    old = make_conversation(alpha, name="whatsapp", status="done", days_ago=40, text="old-one")
    ids = {name: str(c.pk) for name, c in {"web": web, "voice": voice, "old": old}.items()}
    assert listed(alpha) == set(ids.values())
    assert listed(alpha, "channel_kind=voice") == {ids["voice"]}
    assert listed(alpha, "channel_name=web") == {ids["web"]}
    assert listed(alpha, "status=failed") == {ids["voice"]}
    assert listed(alpha, "status=done") == {ids["web"], ids["old"]}
    today = timezone.localdate()
    assert listed(alpha, f"since={today - timedelta(days=7)}") == {ids["web"], ids["voice"]}
    assert listed(alpha, f"until={today - timedelta(days=30)}") == {ids["old"]}
    page = alpha.dashboard("sam").get("/conversations/?channel_name=web").content.decode()
    assert "web-done" in page and "voice-failed" not in page


def test_bad_filters_are_shown_not_a_500(alpha):
    """A4: a bad date, an unknown status or an inverted range are errors on the page (400, and no
    list that would look filtered); a page number out of range or malformed is the nearest page."""
    make_conversation(alpha, status="done")
    for query in ("since=yesterday", "status=exploded", "since=2026-05-02&until=2026-05-01"):
        response = alpha.dashboard("sam").get(f"/conversations/?{query}")
        assert response.status_code == 400, query
        assert 'class="error"' in response.content.decode() and list(response.context["page"]) == [], query
    for query in ("page=99999", "page=abc"):
        assert alpha.dashboard("sam").get(f"/conversations/?{query}").status_code == 200, query


def test_the_list_is_paginated_and_keeps_the_filters(alpha):
    """A2: 50 a page; the next-page link keeps the filter."""
    for n in range(53):
        make_conversation(alpha, name="web", text=f"c{n}")
    first = alpha.dashboard("sam").get("/conversations/?channel_name=web")
    assert len(first.context["page"]) == 50 and "channel_name=web&amp;page=2" in first.content.decode()
    assert len(alpha.dashboard("sam").get("/conversations/?channel_name=web&page=2").context["page"]) == 3


def test_another_tenants_conversation_is_not_found_and_not_listed(alpha, beta):
    """T1: B's conversation is a 404 on A's dashboard and never in A's list."""
    theirs = make_conversation(beta, text="beta-secret-customer")
    connection.set_schema_to_public()
    client = alpha.dashboard("ana")
    assert client.get(f"/conversations/{theirs.pk}/").status_code == 404
    assert "beta-secret-customer" not in client.get("/conversations/").content.decode()
    assert beta.dashboard("ana").get(f"/conversations/{theirs.pk}/").status_code == 200


def test_the_pages_need_a_signed_in_user(alpha):
    """T4: anonymous visitors are sent to the login page."""
    conversation = make_conversation(alpha)
    connection.set_schema_to_public()
    for url in ("/conversations/", f"/conversations/{conversation.pk}/", "/truncations/"):
        response = alpha.dashboard().get(url)
        assert response.status_code == 302 and "/login/" in response["Location"], url


def test_the_navigation_links_the_new_pages_by_role(alpha):
    """A2, T4: everyone sees Conversations and Truncations; only admins see Playground and Webhooks."""
    support = alpha.dashboard("sam").get("/").content.decode()
    admin = alpha.dashboard("ana").get("/").content.decode()
    for html in (support, admin):
        assert 'href="/conversations/"' in html and 'href="/truncations/"' in html
    assert 'href="/playground/"' in admin and 'href="/webhooks/"' in admin
    assert 'href="/playground/"' not in support and 'href="/webhooks/"' not in support


def test_an_api_key_does_not_open_the_dashboard(alpha):
    """T2, T3: the dashboard wants a signed-in user; a channel or admin key in the header opens no page."""
    conversation = make_conversation(alpha)
    connection.set_schema_to_public()
    for key in (alpha.channel_key, alpha.admin_key):
        client = alpha.dashboard()
        for url in ("/conversations/", f"/conversations/{conversation.pk}/", "/truncations/", "/playground/", "/webhooks/"):
            response = client.get(url, HTTP_AUTHORIZATION=f"Bearer {key}")
            assert response.status_code == 302 and "/login/" in response["Location"], url
