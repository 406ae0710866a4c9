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
