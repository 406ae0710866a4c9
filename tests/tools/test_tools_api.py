"""Servers, tools and catalog versions over the API (A1, A2, M1, T7): isolation, write-only
auth headers, validation, enable/disable."""

import json

from django.db import connection

from tenants.models import ApprovedCommand
from tests.isolation import IsolationContract
from tests.tools.contract_samples import good
from tools.catalog import definition_hash
from tools.models import CatalogVersion, McpServer, Tool


def make_server(world, slug="soporte"):
    with world.schema():
        return McpServer.objects.create(slug=slug, transport="streamable_http", url="https://93.184.216.34/mcp")


def make_tool(world, certification="certified"):
    server = make_server(world, slug="s1")
    definition = good()
    with world.schema():
        return Tool.objects.create(
            server=server, name=definition["name"], prefixed_name=f"{server.slug}__{definition['name']}", position=0,
            definition=definition, definition_hash=definition_hash(definition), level="write",
            certification=certification, certified_hash=definition_hash(definition),
        )


class TestServerIsolation(IsolationContract):
    list_url = "/api/v1/servers"
    detail_url = "/api/v1/servers/{id}"
    detail_methods = ("get", "patch", "delete")

    def make_object(self, world):
        return make_server(world).pk


class TestServerSyncIsolation(IsolationContract):
    detail_url = "/api/v1/servers/{id}/versions"

    def make_object(self, world):
        return make_server(world).pk


class TestToolIsolation(IsolationContract):
    list_url = "/api/v1/tools"
    detail_url = "/api/v1/tools/{id}"
    detail_methods = ("get", "patch")

    def make_object(self, world):
        return make_tool(world).pk


class TestCatalogVersionIsolation(IsolationContract):
    detail_url = "/api/v1/catalog-versions/{id}"

    def make_object(self, world):
        server = make_server(world)
        with world.schema():
            return CatalogVersion.objects.create(server=server, number=1, diff={"added": ["x"]}).pk


def post(world, url, body):
    return world.api().post(url, json.dumps(body), content_type="application/json")


def test_it_registers_a_server_and_never_returns_its_auth_headers(alpha, django_capture_on_commit_callbacks):
    """M1, T7: headers are stored encrypted; responses only list their names; a sync is queued."""
    with django_capture_on_commit_callbacks() as callbacks:
        response = post(alpha, "/api/v1/servers", {
            "slug": "crm", "transport": "streamable_http", "url": "https://93.184.216.34/mcp",
            "auth_headers": {"Authorization": "Bearer tenant-secret-123"},
        })
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["auth_header_names"] == ["Authorization"] and body["sync_status"] == "queued"
    assert "tenant-secret-123" not in response.content.decode()
    assert sum("queue_sync" in cb.__qualname__ for cb in callbacks) == 1  # the first sync, queued after commit
    assert "tenant-secret-123" not in alpha.api().get(f"/api/v1/servers/{body['id']}").content.decode()
    with alpha.schema():
        server = McpServer.objects.get(pk=body["id"])
        assert server.headers == {"Authorization": "Bearer tenant-secret-123"}
        with connection.cursor() as cursor:
            cursor.execute("SELECT auth_headers FROM tools_mcpserver WHERE id = %s", [server.pk])
            assert "tenant-secret-123" not in cursor.fetchone()[0]


def test_it_refuses_private_urls_unless_allowed(alpha, settings):
    """M2: registration refuses a loopback URL when private hosts are not allowed."""
    settings.ASIXTO_ALLOW_PRIVATE_HOSTS = False
    response = post(alpha, "/api/v1/servers", {"slug": "crm", "transport": "streamable_http", "url": "https://127.0.0.1/mcp"})
    assert response.status_code == 400 and "url" in response.json()["error"]["fields"]
    response = post(alpha, "/api/v1/servers", {"slug": "crm", "transport": "streamable_http", "url": "http://93.184.216.34/mcp"})
    assert response.status_code == 400 and "url" in response.json()["error"]["fields"]
    with alpha.schema():
        assert not McpServer.objects.exists()


def test_it_lets_tenants_pick_only_approved_commands(alpha):
    """M3: stdio servers name an operator-approved command; anything else is refused."""
    response = post(alpha, "/api/v1/servers", {"slug": "local", "transport": "stdio", "command": "rm"})
    assert response.status_code == 400 and "command" in response.json()["error"]["fields"]
    connection.set_schema_to_public()
    ApprovedCommand.objects.create(slug="hora", executable="/usr/bin/true", allow_extra_args=False)
    response = post(alpha, "/api/v1/servers", {"slug": "local", "transport": "stdio", "command": "hora", "args": ["--evil"]})
    assert response.status_code == 400 and "args" in response.json()["error"]["fields"]
    response = post(alpha, "/api/v1/servers", {"slug": "local", "transport": "stdio", "command": "hora"})
    assert response.status_code == 201, response.content


def test_it_refuses_bad_server_payloads(alpha):
    """A4, M1: bad slug, unknown transport, unknown fields, bad headers, wrong types."""
    response = post(alpha, "/api/v1/servers", {
        "slug": "Bad Slug", "transport": "carrier-pigeon", "timeout_seconds": "soon", "colour": "red",
        "auth_headers": {"Bad Header!": "x"},
    })
    assert response.status_code == 400
    assert {"slug", "transport", "timeout_seconds", "colour", "auth_headers"} <= set(response.json()["error"]["fields"])


def test_it_enables_and_disables_tools_and_stores_sample_arguments(alpha):
    """C (admin switch), C8: the admin disables a certified tool; sample arguments must be an object."""
    tool = make_tool(alpha)
    connection.set_schema_to_public()
    response = alpha.api().patch(f"/api/v1/tools/{tool.pk}", json.dumps({"enabled": False}), content_type="application/json")
    assert response.status_code == 200 and response.json()["available_to_agents"] is False
    response = alpha.api().patch(f"/api/v1/tools/{tool.pk}", json.dumps({"sample_arguments": [1, 2]}), content_type="application/json")
    assert response.status_code == 400 and "sample_arguments" in response.json()["error"]["fields"]
    response = alpha.api().patch(
        f"/api/v1/tools/{tool.pk}", json.dumps({"sample_arguments": {"documento": "1"}}), content_type="application/json"
    )
    assert response.json()["sample_arguments"] == {"documento": "1"}
    detail = alpha.api().get(f"/api/v1/tools/{tool.pk}").json()
    assert detail["prefixed_name"] == "s1__abrir_caso_soporte" and detail["definition"]["name"] == "abrir_caso_soporte"


def test_it_filters_tools_by_server_and_certification(alpha):
    """A1: tool lists filter by server slug and certification state."""
    make_tool(alpha, certification="blocked")
    assert alpha.api().get("/api/v1/tools?certification=blocked").json()["count"] == 1
    assert alpha.api().get("/api/v1/tools?certification=certified").json()["count"] == 0
    assert alpha.api().get("/api/v1/tools?server=nope").json()["count"] == 0
