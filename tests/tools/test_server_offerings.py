"""What an MCP server offers besides tools, read-only (issue 20, M2, A1, A2, A4, T1): its resources
and prompts, listed live through the connection layer — `GET /api/v1/servers/{id}/resources` and
`…/prompts`, and the server's page. Real SDK servers on loopback ports: one that offers both
(paginated), one that offers neither (an empty list), one whose listing fails (a clear code)."""

from typing import Any

import mcp_types as types
from mcp.server import Server

from tests.support.mcp_apps import streamable_app
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import dead_url
from tools.services import server_create

RESOURCES = [
    {"uri": "file:///manuales/router-wifi6.pdf", "name": "router-wifi6", "title": "Manual del Router WiFi 6",
     "description": "Guía de instalación.", "mimeType": "application/pdf", "size": 48213},
    {"uri": "https://docs.alfa.example/garantia", "name": "garantia", "description": "Política de garantía."},
    {"uri": "file:///tarifas.csv", "name": "tarifas", "mimeType": "text/csv"},
]
PROMPTS = [
    {"name": "resumen_caso", "title": "Resumir un caso", "description": "Resume un caso de soporte.",
     "arguments": [{"name": "numero", "description": "Número del caso", "required": True}, {"name": "tono"}]},
]


def offering_server(*, page_size=2, failing_prompts=False) -> Server[Any]:
    resources = [types.Resource.model_validate(item) for item in RESOURCES]
    prompts = [types.Prompt.model_validate(item) for item in PROMPTS]

    async def list_resources(ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + page_size
        return types.ListResourcesResult(resources=resources[start:end], next_cursor=str(end) if end < len(resources) else None)

    async def list_prompts(ctx, params) -> types.ListPromptsResult:
        if failing_prompts:
            raise RuntimeError("prompt store offline")
        return types.ListPromptsResult(prompts=prompts)

    return Server("asixto-test-offerings", version="1.0.0", on_list_resources=list_resources, on_list_prompts=list_prompts)


def tools_only_server() -> Server[Any]:
    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])

    return Server("asixto-test-tools-only", version="1.0.0", on_list_tools=list_tools)


def register(world, url, slug="docs"):
    with world.schema():
        return server_create(data={"slug": slug, "transport": "streamable_http", "url": url})


def listing(world, server, kind, key=None):
    return world.api(key).get(f"/api/v1/servers/{server.pk}/{kind}", HTTP_ACCEPT_LANGUAGE="en")


def test_it_lists_the_resources_and_prompts_a_server_offers(alpha):
    """Issue 20, A1: every page of resources/list, in the server's order, with the protocol's
    fields; prompts with their arguments. Nothing is stored."""
    with serve_asgi(streamable_app(offering_server())) as url:
        server = register(alpha, f"{url}/mcp")
        resources = listing(alpha, server, "resources")
        prompts = listing(alpha, server, "prompts")
    assert resources.status_code == 200, resources.content
    body = resources.json()
    assert body["server"] == str(server.pk) and body["truncated"] is False
    assert [item["uri"] for item in body["resources"]] == [item["uri"] for item in RESOURCES]
    assert body["resources"][0] == {**RESOURCES[0]}
    assert body["resources"][2] == {"uri": "file:///tarifas.csv", "name": "tarifas", "title": None, "description": None,
                                    "mimeType": "text/csv", "size": None}
    assert prompts.json()["prompts"] == [{
        "name": "resumen_caso", "title": "Resumir un caso", "description": "Resume un caso de soporte.",
        "arguments": [{"name": "numero", "description": "Número del caso", "required": True},
                      {"name": "tono", "description": None, "required": False}]}]


def test_a_server_that_offers_none_lists_nothing(alpha):
    """Issue 20: no resources or prompts capability → an empty list, not an error."""
    with serve_asgi(streamable_app(tools_only_server())) as url:
        server = register(alpha, f"{url}/mcp")
        for kind in ("resources", "prompts"):
            response = listing(alpha, server, kind)
            assert response.status_code == 200 and response.json()[kind] == [], response.content


def test_a_server_error_is_a_clear_error_code(alpha):
    """Issue 20, A4: the server's own error (-32603 from a failing handler) and a server that is
    down each answer 502 with the connection layer's code and message."""
    with serve_asgi(streamable_app(offering_server(failing_prompts=True))) as url:
        server = register(alpha, f"{url}/mcp")
        failed = listing(alpha, server, "prompts")
        assert listing(alpha, server, "resources").status_code == 200
    assert failed.status_code == 502
    error = failed.json()["error"]
    assert error["code"] == "peer_error" and "prompts/list" in error["message"], error
    down = register(alpha, dead_url().replace("/v1", "/mcp"), slug="caido")
    gone = listing(alpha, down, "resources")
    assert gone.status_code == 502 and gone.json()["error"]["code"] == "connect_refused", gone.content


def test_isolation_and_scope(alpha, beta):
    """T1, T2, T3: another tenant's server is a 404; a channel key is refused."""
    with serve_asgi(streamable_app(offering_server())) as url:
        server = register(alpha, f"{url}/mcp")
        assert listing(beta, server, "resources").status_code == 404
        assert listing(alpha, server, "prompts", key=alpha.channel_key).status_code == 403


def test_the_servers_page_lists_them_read_only(alpha):
    """Issue 20, A2, T4: support staff reach the list from the servers page; a failing listing
    shows its message beside the one that worked; a server offering none says so."""
    with serve_asgi(streamable_app(offering_server(failing_prompts=True))) as url:
        server = register(alpha, f"{url}/mcp")
        client = alpha.dashboard("sam")
        assert f"/servers/{server.pk}/offerings/" in client.get("/servers/").content.decode()
        page = client.get(f"/servers/{server.pk}/offerings/", HTTP_ACCEPT_LANGUAGE="en")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Manual del Router WiFi 6" in html and "file:///tarifas.csv" in html
    assert "prompts/list" in html and "peer_error" in html and "<form" not in html.split("<main", 1)[-1]
    with serve_asgi(streamable_app(tools_only_server())) as url:
        quiet = register(alpha, f"{url}/mcp", slug="quieto")
        html = alpha.dashboard("sam").get(f"/servers/{quiet.pk}/offerings/").content.decode()
    assert "El servidor no ofrece recursos." in html and "El servidor no ofrece prompts." in html  # Spanish by default
