"""Auth headers of an MCP server (M1, T7): the API and the dashboard form follow one rule, so
neither stores a header the platform sets itself (Host was sent on every outbound request), a
name or value httpx cannot send, or one name twice."""

import json

import pytest

from tools.models import McpServer

URL = "https://93.184.216.34/mcp"
FORM = {"slug": "crm", "transport": "streamable_http", "url": URL, "timeout_seconds": "10", "enabled": "on"}
REFUSED = [
    {"Host": "evil.example"},
    {"content-length": "0"},
    {"Content-Type": "text/plain"},
    {"Transfer-Encoding": "chunked"},
    {"Mcp-Session-Id": "x"},
    {"MCP-Protocol-Version": "1"},
    {"Connection": "close"},
    {"X Api Key": "x"},
    {"X-Api-Kéy": "x"},
    {"X-Api-Key": "caf\u00e9"},
    {"X-Api-Key": "a\x01b"},
    {"X-Api-Key": "x" * 4001},
    {"Authorization": "Bearer a", "authorization": "Bearer b"},
]


def _post_api(world, headers):
    body = json.dumps({"slug": "crm", "transport": "streamable_http", "url": URL, "auth_headers": headers})
    return world.api().post("/api/v1/servers", body, content_type="application/json")


@pytest.mark.parametrize("headers", REFUSED)
def test_the_api_refuses_headers_it_cannot_or_must_not_send(alpha, headers):
    """M1, A4: a field error on auth_headers; nothing stored."""
    response = _post_api(alpha, headers)
    assert response.status_code == 400, response.content
    assert "auth_headers" in response.json()["error"]["fields"]
    with alpha.schema():
        assert not McpServer.objects.exists()


@pytest.mark.parametrize("headers", REFUSED)
def test_the_dashboard_form_refuses_the_same_headers(alpha, headers):
    """M1, A2: the form applies the API's rule (it took `Host:` before)."""
    text = "\n".join(f"{name}: {value}" for name, value in headers.items())
    response = alpha.dashboard("ana").post("/servers/new/", {**FORM, "headers_text": text})
    assert response.status_code == 200
    assert "headers_text" in response.context["form"].errors, text
    with alpha.schema():
        assert not McpServer.objects.exists()


def test_both_accept_ordinary_auth_headers(alpha):
    """M1, T7: Authorization and X- headers are stored (encrypted) from either surface."""
    headers = {"Authorization": "Bearer abc.def-123", "X-Api-Key": "k_1", "X_Tenant": "acme"}
    assert _post_api(alpha, headers).status_code == 201
    with alpha.schema():
        assert McpServer.objects.get(slug="crm").headers == headers
    text = "\n".join(f"{name}: {value}" for name, value in headers.items())
    response = alpha.dashboard("ana").post("/servers/new/", {**FORM, "slug": "erp", "headers_text": text})
    assert response.status_code == 302, response.context["form"].errors
    with alpha.schema():
        assert McpServer.objects.get(slug="erp").headers == headers


def test_auth_headers_do_not_follow_the_server_to_another_host(alpha):
    """Issue 19 M5: a server's URL moved to another host clears its stored headers unless the same
    change sends new ones (they would otherwise go to a host the admin picks, who cannot read
    them); a new path on the same host keeps them."""
    created = _post_api(alpha, {"X-Api-Key": "k_bound"})
    assert created.status_code == 201, created.content
    server_id = created.json()["id"]

    def patch(body):
        return alpha.api().patch(f"/api/v1/servers/{server_id}", json.dumps(body), content_type="application/json").json()

    assert patch({"url": "https://93.184.216.34/other/mcp"})["auth_header_names"] == ["X-Api-Key"]
    assert patch({"url": "https://93.184.216.35/mcp"})["auth_header_names"] == []
    with alpha.schema():
        assert McpServer.objects.get(pk=server_id).headers == {}
    assert patch({"url": "https://93.184.216.36/mcp", "auth_headers": {"X-Api-Key": "k_new"}})["auth_header_names"] == ["X-Api-Key"]
    with alpha.schema():
        assert McpServer.objects.get(pk=server_id).headers == {"X-Api-Key": "k_new"}
