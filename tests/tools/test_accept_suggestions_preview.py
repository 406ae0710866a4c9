"""Accepting the gateway's suggestions with a preview (issue 20; C5, C6, A2, A4): server-everything
in compatible mode gets a suggested verb for every tool; made the admin's own, the verb of
trigger-long-running-operation ("iniciar …") contradicts its readOnlyHint: true and would block
it. The preview lists that tool with its finding; accepting without confirming it leaves it as
it was and accepts the others; confirming accepts it too, and its finding then points to the
overlay, not to the server. Capabilities are suggested only from a tool's own words."""

import pytest
from django.db import connection
from django.utils import translation

from tests.support.everything import requires_everything
from tests.tools.test_catalog_sync import scenarios  # noqa: F401 (a fixture: soporte, pqr, garantia, ventas)
from tests.tools.test_contract_overlays import everything_server, tool_named
from tools.models import Tool
from tools.rules.overlay import SUGGESTED_KEY
from tools.rules.suggestions import suggest_capabilities

LONG = "everything__trigger-long-running-operation"
BUSINESS = ["soporte", "pqr", "garantia", "ventas"]


@pytest.fixture(autouse=True)
def english():
    with translation.override("en"):
        yield


def suggested(tool: Tool) -> list:
    return (tool.definition.get("_meta") or {}).get(SUGGESTED_KEY) or []


@requires_everything
def test_a_suggestion_that_would_block_a_tool_is_shown_and_applied_only_when_confirmed(alpha):
    """C5, C6, A2, issue 20: the preview names the tool that accepting would block, with its C5
    finding, and saves nothing; accepting without confirmation applies the others and leaves
    that one suggested and certified; confirming applies it, blocked, with a hint that names the
    overlay."""
    server = everything_server(alpha)
    assert tool_named(alpha, LONG).certification == "certified" and "verb" in suggested(tool_named(alpha, LONG))
    client = alpha.dashboard("ana")
    assert alpha.dashboard("sam").get(f"/servers/{server.pk}/contract/accept/").status_code == 403

    page = client.get(f"/servers/{server.pk}/contract/accept/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert LONG in page and "would be blocked" in page
    assert "readOnlyHint: true but its name or verb says it writes (iniciar)" in page
    assert f'name="confirm" value="{tool_named(alpha, LONG).pk}"' in page
    assert "everything__get-sum" not in page  # its verdict does not change
    with alpha.schema():
        assert not Tool.objects.filter(server=server).exclude(overlay={}).exists()  # a preview saves nothing

    response = client.post(f"/servers/{server.pk}/contract/accept/", follow=True, HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 200
    assert f"would block the tool: {LONG}" in response.content.decode()
    held = tool_named(alpha, LONG)
    assert "verb" not in (held.overlay or {}) and "verb" in suggested(held) and held.certification == "certified"
    get_sum = tool_named(alpha, "everything__get-sum")
    assert get_sum.overlay["verb"] == "consultar la suma" and not suggested(get_sum) and get_sum.is_available_to_agents

    client.post(f"/servers/{server.pk}/contract/accept/", {"confirm": [str(held.pk)]})
    blocked = tool_named(alpha, LONG)
    assert blocked.overlay["verb"].startswith("iniciar") and blocked.certification == "blocked"
    c5 = [f for f in blocked.findings.all() if f.rule == "C5" and f.severity == "blocking"]
    with translation.override("en"):
        hint = str(c5[0].hint)
    assert len(c5) == 1 and "is your overlay's, not the server's" in hint and "Contract overlays on the server's page" in hint
    tool_page = client.get(f"/tools/{blocked.pk}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "is your overlay&#x27;s, not the server&#x27;s" in tool_page or "is your overlay's, not the server's" in tool_page


@requires_everything
def test_the_api_holds_back_a_suggestion_that_would_block_unless_confirmed(alpha):
    """C5, A1, A4, issue 20: the API's accept-suggestions applies the same rule."""
    server = everything_server(alpha)
    long_id = str(tool_named(alpha, LONG).pk)
    connection.set_schema_to_public()
    first = alpha.api().post(f"/api/v1/servers/{server.pk}/accept-suggestions", {}, content_type="application/json")
    assert first.status_code == 200, first.content
    assert "verb" in suggested(tool_named(alpha, LONG)) and tool_named(alpha, LONG).certification == "certified"
    connection.set_schema_to_public()
    bad = alpha.api().post(f"/api/v1/servers/{server.pk}/accept-suggestions", {"confirm": ["nope"]}, content_type="application/json")
    assert bad.status_code == 400
    connection.set_schema_to_public()
    second = alpha.api().post(f"/api/v1/servers/{server.pk}/accept-suggestions", {"confirm": [long_id]},
                              content_type="application/json")
    assert second.status_code == 200
    assert tool_named(alpha, LONG).certification == "blocked"


@requires_everything
def test_server_everything_is_suggested_no_business_capabilities(alpha, scenarios):  # noqa: F811
    """C6, issue 20: capabilities come from the tool's own words: no tool of server-everything is
    given soporte, pqr, garantia or ventas, and none is blocked for lacking them."""
    everything_server(alpha)
    with alpha.schema():
        tools = list(Tool.objects.filter(server__slug="everything", removed_in__isnull=True))
    assert len(tools) >= 13
    for tool in tools:
        assert not set((tool.definition.get("_meta") or {}).get("com.asixto/capabilities") or []) & set(BUSINESS), tool.name
    assert tool_named(alpha, "everything__get-sum").is_available_to_agents


def test_capabilities_are_suggested_from_the_tools_own_words():
    """C6, issue 20: a scenario the name or description names is suggested; nothing otherwise."""
    assert suggest_capabilities(name="get-sum", description="Returns the sum of two numbers", scenarios=BUSINESS) == []
    assert suggest_capabilities(name="abrir_caso", description="Abre un caso de soporte o una PQR.",
                                scenarios=BUSINESS) == ["soporte", "pqr"]
    assert suggest_capabilities(name="x", scenarios=None) == ["general"]
