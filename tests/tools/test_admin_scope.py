"""Admin-only endpoints refuse channel keys (T3): a channel key (a chat widget's, a voice
integration's) can start conversations and turns, never register, sync, probe, invoke or change
anything. Each refusal is checked to change nothing, so removing the scope check from any one
of these views fails here."""

import json

import pytest
from django.db import connection

from tests.tools.test_tools_api import make_tool
from tools.models import Finding, McpServer, Tool, ToolCall


def _world_objects(world):
    tool = make_tool(world)
    with world.schema():
        tool.sample_arguments = {"documento": "1"}
        tool.save()
    connection.set_schema_to_public()
    return tool


def _state(world, tool):
    with world.schema():
        server = McpServer.objects.get(pk=tool.server_id)
        fresh = Tool.objects.get(pk=tool.pk)
        state = (
            server.sync_status, server.name, McpServer.objects.count(), fresh.enabled, fresh.certification,
            fresh.certified_at, fresh.sample_arguments, Finding.objects.count(), ToolCall.objects.count(),
        )
    connection.set_schema_to_public()
    return state


def _requests(tool):
    server = tool.server_id
    return [
        ("post", f"/api/v1/servers/{server}/sync", None),
        ("post", f"/api/v1/tools/{tool.pk}/probe", None),
        ("post", f"/api/v1/tools/{tool.pk}/invoke", {"arguments": {"documento": "1"}}),
        ("patch", f"/api/v1/tools/{tool.pk}", {"enabled": False}),
        ("patch", f"/api/v1/tools/{tool.pk}", {"sample_arguments": {"x": 1}}),
        ("post", "/api/v1/servers", {"slug": "crm", "transport": "streamable_http", "url": "https://93.184.216.34/mcp"}),
        ("patch", f"/api/v1/servers/{server}", {"name": "renamed"}),
        ("delete", f"/api/v1/servers/{server}", None),
        ("patch", "/api/v1/tenant", {"agent_instructions": "hola"}),
        ("post", "/api/v1/api-keys", {"name": "k", "scope": "admin"}),
    ]


@pytest.mark.parametrize("index", range(10))
def test_a_channel_key_cannot_use_admin_endpoints(alpha, index, django_capture_on_commit_callbacks):
    """T3: 403 with the error body, no sync queued, no probe or call made, nothing changed."""
    tool = _world_objects(alpha)
    before = _state(alpha, tool)
    method, url, body = _requests(tool)[index]
    client = alpha.api(key=alpha.channel_key)
    with django_capture_on_commit_callbacks() as callbacks:
        kwargs = {"data": json.dumps(body), "content_type": "application/json"} if body is not None else {}
        response = getattr(client, method)(url, **kwargs)
    assert response.status_code == 403, (method, url, response.content)
    assert response.json()["error"]["code"] == "permission_denied"
    assert callbacks == []
    assert _state(alpha, tool) == before
    # The same request with the admin key is accepted, so the 403 is the scope, not the request.
    if index in (0, 3, 6):
        assert getattr(alpha.api(), method)(url, **kwargs).status_code in (200, 202)


def test_an_admin_key_queues_a_sync(alpha, django_capture_on_commit_callbacks):
    """M5: the same endpoint with the admin key queues exactly one sync."""
    tool = _world_objects(alpha)
    with django_capture_on_commit_callbacks() as callbacks:
        response = alpha.api().post(f"/api/v1/servers/{tool.server_id}/sync")
    assert response.status_code == 202 and response.json()["sync_status"] == "queued"
    assert len(callbacks) == 1
