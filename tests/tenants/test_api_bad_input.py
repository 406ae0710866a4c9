"""Hostile input on the API (A4): a broken credential, a body nested thousands deep, text that
PostgreSQL cannot store, a body over the size limit. Each gets the project's JSON error body
with a 4xx, never a 500, and nothing stored changes."""

import json

import pytest
from django.db import connection
from django.test import Client

from tenants.models import Tenant
from tests.tools.test_tools_api import make_tool

DEEP = "[" * 5000 + "]" * 5000


def _error(response, status):
    assert response.status_code == status, response.content[:500]
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()["error"]
    assert body["code"] and body["message"]
    return body


@pytest.mark.parametrize("credential", [
    "asx_" + "\x00" * 12 + "_" + "\x00" * 43,
    "asx_\x00\x00\x00",
    "asx_" + "a" * 12 + "_\x00",
    "asx_" + "\ud800" * 12 + "_x",
])
def test_it_answers_401_to_a_key_with_nul_bytes_or_surrogates(alpha, credential):
    """A4, T2: a malformed key is just an invalid key."""
    response = Client(headers={"Authorization": f"Bearer {credential}"}).get("/api/v1/servers")
    assert _error(response, 401)["code"] == "not_authenticated"


def _write_endpoints(world):
    tool = make_tool(world)
    connection.set_schema_to_public()
    return [
        ("patch", "/api/v1/tenant"),
        ("post", "/api/v1/api-keys"),
        ("post", "/api/v1/servers"),
        ("patch", f"/api/v1/servers/{tool.server_id}"),
        ("patch", f"/api/v1/tools/{tool.pk}"),
        ("post", f"/api/v1/tools/{tool.pk}/invoke"),
    ]


def test_it_answers_400_to_a_body_nested_5000_deep_on_every_write_endpoint(alpha):
    """A4: deep nesting is refused by the parser (no RecursionError, no 500)."""
    client = alpha.api()
    for method, url in _write_endpoints(alpha):
        for body in (DEEP, '{"arguments": ' + DEEP + "}", '{"sample_arguments": {"a": ' + DEEP + "}}"):
            response = getattr(client, method)(url, body, content_type="application/json")
            assert _error(response, 400)["code"] == "parse_error", (method, url)


def test_it_accepts_ordinary_nesting(alpha):
    """A4: the depth bound leaves real payloads alone (a few levels of objects and lists)."""
    tool = make_tool(alpha)
    connection.set_schema_to_public()
    sample = {"a": {"b": [{"c": [[1, 2], {"d": "x"}]}]}}
    response = alpha.api().patch(
        f"/api/v1/tools/{tool.pk}", json.dumps({"sample_arguments": sample}), content_type="application/json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["sample_arguments"] == sample


def test_it_answers_400_to_the_operator_api_with_a_deep_body(worlds, db):
    """A4: the operator API uses the same parser."""
    from tenants.models import ApiKey
    from tenants.services import api_key_create

    _key, plaintext = api_key_create(tenant=None, name="ops", scope=ApiKey.Scope.OPERATOR)
    client = Client(headers={"Authorization": f"Bearer {plaintext}"})
    response = client.post("/api/v1/operator/tenants", DEEP, content_type="application/json")
    assert _error(response, 400)["code"] == "parse_error"


@pytest.mark.parametrize("bad", ["a\x00b", "\ud800", "x\udfffy"])
def test_it_refuses_text_postgresql_cannot_store_in_sample_arguments(alpha, bad):
    """A4: a NUL or an unpaired surrogate (as a value or a key) is a field error, and the
    stored sample arguments stay as they were."""
    tool = make_tool(alpha)
    with alpha.schema():
        tool.sample_arguments = {"documento": "1"}
        tool.save()
    connection.set_schema_to_public()
    for sample in ({"documento": bad}, {bad: 1}, {"a": [{"b": bad}]}):
        body = json.dumps({"sample_arguments": sample})  # escapes: \u0000, \ud800
        response = alpha.api().patch(f"/api/v1/tools/{tool.pk}", body, content_type="application/json")
        error = _error(response, 400)
        assert error["code"] == "invalid" and "sample_arguments" in error["fields"], error
    with alpha.schema():
        tool.refresh_from_db()
        assert tool.sample_arguments == {"documento": "1"}


@pytest.mark.parametrize("bad", ["a\x00b", "\ud800"])
def test_it_refuses_text_postgresql_cannot_store_in_call_arguments(alpha, bad):
    """A4, G9: the console's arguments are checked before any call is made or recorded."""
    from tools.models import ToolCall

    tool = make_tool(alpha)
    connection.set_schema_to_public()
    body = json.dumps({"arguments": {"documento": bad}})
    response = alpha.api().post(f"/api/v1/tools/{tool.pk}/invoke", body, content_type="application/json")
    error = _error(response, 400)
    assert "arguments" in error["fields"], error
    with alpha.schema():
        assert not ToolCall.objects.exists()


def test_it_refuses_nul_and_surrogates_in_plain_text_fields(alpha):
    """A4: the same rule holds for ordinary text fields (a server's name, a key's name)."""
    for url, body, field in (
        ("/api/v1/api-keys", {"name": "k\ud800", "scope": "channel"}, "name"),
        ("/api/v1/servers", {"slug": "crm", "name": "a\x00", "transport": "streamable_http", "url": "https://93.184.216.34/mcp"}, "name"),
        ("/api/v1/tenant", {"agent_instructions": "hola \udc00"}, "agent_instructions"),
    ):
        response = alpha.api().generic("PATCH" if url == "/api/v1/tenant" else "POST", url, json.dumps(body), content_type="application/json")
        error = _error(response, 400)
        assert field in error.get("fields", {}), error


def test_it_answers_413_in_the_json_error_body_to_an_oversized_body(alpha):
    """A4: a 10 MB body gets the API's JSON error, not Django's HTML 400 page."""
    tool = make_tool(alpha)
    connection.set_schema_to_public()
    body = json.dumps({"sample_arguments": {"x": "a" * 10_000_000}})
    for method, url in (("patch", f"/api/v1/tools/{tool.pk}"), ("post", "/api/v1/servers")):
        response = getattr(alpha.api(), method)(url, body, content_type="application/json")
        assert _error(response, 413)["code"] == "payload_too_large"


@pytest.mark.parametrize("query", ["server=%00", "certification=%00", "server=a%00b&certification=blocked"])
def test_it_answers_400_to_nul_bytes_in_list_filters(alpha, query):
    """A4: filters are validated like any other input."""
    response = alpha.api().get(f"/api/v1/tools?{query}")
    assert response.status_code in (200, 400), response.content[:300]
    if response.status_code == 400:
        _error(response, 400)


def test_it_leaves_tenants_unchanged_after_bad_settings(alpha):
    """A4: a refused settings change stores nothing."""
    before = Tenant.objects.get(pk=alpha.tenant.pk).agent_instructions
    alpha.api().patch("/api/v1/tenant", '{"agent_instructions": "x", "scenarios": ' + DEEP + "}", content_type="application/json")
    assert Tenant.objects.get(pk=alpha.tenant.pk).agent_instructions == before
