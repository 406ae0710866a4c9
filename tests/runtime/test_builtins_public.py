"""Public sources in real turns (R13, M2): off by default; one switch turns web search and page
reading on together; page reading obeys the outbound rules and follows no redirect; what they
bring is labelled public in the turn record and in the facts the reply is written from."""

import json

import pytest
from django.test import override_settings

from runtime.builtins import TOOLS, Context, call_builtin
from runtime.builtins.public import page_text
from runtime.models import Turn, TurnStep
from tenants.models import Tenant
from tests.runtime.runtime_support import agent, post, run, tenant_settings
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, say
from tests.support.public_web import PAGE, PublicWeb
from tools.gateway import flush_records
from tools.models import ToolCall

SEARCH, READ = "asixto__web_search", "asixto__read_page"


@pytest.fixture
def web():
    public_web = PublicWeb()
    with serve_asgi(public_web.app()) as url:
        with override_settings(ASIXTO_SEARCH_URL=f"{url}/search"):
            yield public_web, url


@pytest.fixture
def switched_on(alpha):
    """The tenant's public-sources switch (T6, R13) on for the test, off again after."""
    with tenant_settings(alpha, public_sources=True):
        yield


def served(script):
    model = ScriptedModel(script)
    return model, serve_asgi(model.app())


def test_public_sources_are_off_by_default(alpha, web):
    """R13: with the switch untouched, "busca en internet" offers neither search nor page reading."""
    model, server = served([say("No puedo buscar en internet.")])
    with server as url, agent(alpha, f"{url}/v1"):
        run(alpha, post(alpha, "Busca en internet el horario de la biblioteca"))
    assert Tenant.objects.get(pk=alpha.tenant.pk).public_sources is False
    assert Tenant._meta.get_field("public_sources").default is False
    assert SEARCH not in model.tool_names(0) and READ not in model.tool_names(0)


def test_the_settings_api_switch_turns_both_tools_on(alpha, web):
    """R13, T6: the one switch is the tenant setting: PATCH /api/v1/tenant {"public_sources": true}
    offers web search and page reading together (a message that only gives a reason to search);
    switched off again, neither."""
    with tenant_settings(alpha, public_sources=False):
        for on in (True, False):
            response = alpha.api().patch("/api/v1/tenant", json.dumps({"public_sources": on}),
                                         content_type="application/json")
            assert response.status_code == 200 and response.json()["public_sources"] is on
            alpha.tenant.refresh_from_db()  # as the worker loads the tenant for each task
            model, server = served([say("Listo.")])
            with server as url, agent(alpha, f"{url}/v1"):
                run(alpha, post(alpha, "Busca en internet el horario de la biblioteca"))
            offered = set(model.tool_names(0))
            assert ({SEARCH, READ} <= offered) if on else not ({SEARCH, READ} & offered)


def test_the_switch_turns_search_and_reading_on_together_and_labels_the_facts(alpha, web, switched_on):
    """R13, R12: switched on, a reason to search offers both tools; the search result is stored
    as a public fact, recorded like a gateway call, and labelled public in the reply request."""
    public_web, _url = web
    model, server = served([call(SEARCH, {"query": "horario biblioteca"}), say("ok"), say("Abre de 8 a 18.")])
    with server as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "Busca en internet el horario de la biblioteca"))
    assert turn.status == Turn.Status.DONE and turn.reply.text == "Abre de 8 a 18."
    assert {SEARCH, READ} <= set(model.tool_names(0))
    assert public_web.requests == ["/search"]
    with alpha.schema():
        step = TurnStep.objects.get(turn=turn, kind="tool")
        assert step.outcome == "ok" and step.response["source"] == "public" and "Biblioteca pública" in step.model_text
        assert ToolCall.objects.get(turn_id=turn.pk).tool_name == SEARCH
    clean = model.requests[-1]["messages"][-1]["content"]
    assert "public source" in clean and "abre de 8 a 18" in clean


def test_page_reading_keeps_the_text_of_a_page(alpha, web, switched_on):
    """R13: the page's text reaches the model without scripts, styles or markup."""
    _public_web, base = web
    model, server = served([call(READ, {"url": f"{base}/page"}), say("ok"), say("Abre de lunes a viernes.")])
    with server as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, f"Lee esta página {base}/page"))
    with alpha.schema():
        step = TurnStep.objects.get(turn=turn, kind="tool")
    assert step.outcome == "ok" and step.response["source"] == "public"
    assert "Abre de lunes a viernes, de 8 a 18." in step.model_text and "secret" not in step.model_text
    assert "<" not in step.model_text


def test_page_reading_refuses_private_addresses(alpha, web, switched_on):
    """M2, R13: with private hosts not allowed, a loopback page and the metadata address are refused
    before any request is sent (the built-in is called directly: the scripted model is on loopback
    too, so a whole turn could not reach it under this setting); the refusal is recorded."""
    public_web, base = web
    context = Context(turn_id=None, conversation_id="", channel="chat", idempotency_key="t:1", language="en")
    with alpha.schema(), override_settings(ASIXTO_ALLOW_PRIVATE_HOSTS=False):
        for url in (f"{base}/page", "http://169.254.169.254/latest/meta-data/", "http://localhost:9/"):
            outcome, result = call_builtin(tool=TOOLS[READ], arguments={"url": url}, context=context)
            assert (outcome.outcome, result) == ("business_error", None)
            assert "cannot be read" in outcome.model_text
        flush_records()
        assert ToolCall.objects.filter(tool_name=READ, outcome="business_error").count() == 3
    assert public_web.requests == []


def test_page_reading_follows_no_redirect(alpha, web, switched_on):
    """M2, R13: a redirect (here to the metadata address) is not followed; the model is told."""
    public_web, base = web
    model, server = served([call(READ, {"url": f"{base}/moved"}), say("ok"), say("No pude leerla.")])
    with server as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, f"Lee esta página {base}/moved"))
    with alpha.schema():
        step = TurnStep.objects.get(turn=turn, kind="tool")
    assert step.outcome == "business_error" and "redirec" in step.model_text  # redirect, redirección
    assert public_web.requests == ["/moved"]


def test_page_text_drops_markup():
    """R13: pure extraction with the stdlib parser."""
    text = page_text(PAGE.decode())
    assert text.splitlines() == ["Horario de la biblioteca", "Abre de lunes a viernes, de 8 a 18."]


def test_a_tenants_own_search_backend_is_used_instead_of_the_platforms(alpha, web, switched_on):
    """R13, T6, M2: the search backend is a tenant setting (`search_url`) checked by the outbound
    rules when saved; set, the tenant's backend gets the query and the platform's does not."""
    platform_web, _url = web
    with override_settings(ASIXTO_ALLOW_PRIVATE_HOSTS=False):
        refused = alpha.api().patch("/api/v1/tenant", json.dumps({"search_url": "http://127.0.0.1:9/search"}),
                                    content_type="application/json")
    assert refused.status_code == 400 and "search_url" in refused.json()["error"]["fields"]
    own_web = PublicWeb()
    with serve_asgi(own_web.app()) as own, tenant_settings(alpha, search_url=""):
        response = alpha.api().patch("/api/v1/tenant", json.dumps({"search_url": f"{own}/search"}),
                                     content_type="application/json")
        assert response.status_code == 200 and response.json()["search_url"] == f"{own}/search"
        alpha.tenant.refresh_from_db()  # as the worker loads the tenant for each task
        model, server = served([call(SEARCH, {"query": "horario biblioteca"}), say("ok"), say("Abre de 8 a 18.")])
        with server as url, agent(alpha, f"{url}/v1"):
            turn = run(alpha, post(alpha, "Busca en internet el horario de la biblioteca"))
    with alpha.schema():
        assert TurnStep.objects.get(turn=turn, kind="tool").outcome == "ok"
    assert own_web.requests == ["/search"] and platform_web.requests == []


def test_page_reading_is_refused_and_recorded_while_public_sources_are_off(alpha, web):
    """Issue 19 (low): with the switch off, a direct call of a public built-in is refused before any
    request and recorded, whatever attached it."""
    public_web, base = web
    context = Context(turn_id=None, conversation_id="", channel="chat", idempotency_key="t:2", language="en")
    with alpha.schema():
        outcome, result = call_builtin(tool=TOOLS[READ], arguments={"url": f"{base}/page"}, context=context)
        assert (outcome.outcome, result) == ("refused", None)
        flush_records()
        assert ToolCall.objects.filter(tool_name=READ, outcome="refused").count() == 1
    assert public_web.requests == []


def test_page_reading_never_uses_a_private_host_approval(alpha, web, switched_on):
    """Issue 19 M2: the tenant's approval of the loopback host, on the page's port and for every
    purpose, lets its search backend through but never a page a customer or the model names."""
    from django.db import connection

    from tenants.models import ApprovedPrivateHost

    public_web, base = web
    port = base.rsplit(":", 1)[1].split("/")[0]
    connection.set_schema_to_public()
    ApprovedPrivateHost.objects.create(host="127.0.0.1", tenant=alpha.tenant, ports=port, allow_http=True,
                                       purposes=["model", "mcp", "webhook", "search"])
    context = Context(turn_id=None, conversation_id="", channel="chat", idempotency_key="t:3", language="en")
    with alpha.schema(), override_settings(ASIXTO_ALLOW_PRIVATE_HOSTS=False):
        page, _result = call_builtin(tool=TOOLS[READ], arguments={"url": f"{base}/page"}, context=context)
        search, _found = call_builtin(tool=TOOLS[SEARCH], arguments={"query": "horario"}, context=context)
    assert page.outcome == "business_error" and "cannot be read" in page.model_text
    assert search.outcome == "ok", search.model_text
    assert [request for request in public_web.requests if "/page" in str(request)] == []
