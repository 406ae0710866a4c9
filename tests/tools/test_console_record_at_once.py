"""The test console's call record is stored before the call returns (A1, G9): the invoke answers
with its `record_id`, so a client reading that record right after must find it — without the
call waiting for the record writer's batch, and whatever that writer is doing."""

import json
import uuid

from django.db import connection

from tests.support.faults import FaultyPeer
from tests.support.mcp_servers import serve_asgi
from tests.tools.gateway_support import certified_tool, context, ok_result
from tools.gateway import call_tool, journal, records
from tools.models import CatalogVersion, Tool, ToolCall


def test_a_console_call_is_stored_when_it_returns_even_with_the_writer_lingering(committed_world, django_db_blocker, monkeypatch):
    """A1, G9: outside any transaction (as under gunicorn), a console call's record is in
    PostgreSQL when `call_tool` returns, with no flush — here with the writer's batch window an
    hour long, so a record left to the writer would not be there; a turn's call is still left to it."""
    monkeypatch.setattr(records, "LINGER_SECONDS", 3600)
    peer = FaultyPeer([ok_result(), ok_result()])
    with django_db_blocker.unblock(), serve_asgi(peer.app()) as url:
        tool = certified_tool(committed_world, url)
        with committed_world.schema():
            console = call_tool(tool_id=tool.pk, arguments={"consulta": "router"},
                                context=context(source=ToolCall.Source.CONSOLE, idempotency_key=f"console-{uuid.uuid4().hex}"))
            turn = call_tool(name=tool.prefixed_name, arguments={"consulta": "router"}, context=context())
            stored = set(ToolCall.objects.filter(pk__in=[console.record_id, turn.record_id]).values_list("pk", flat=True))
            row = ToolCall.objects.get(pk=console.record_id)
        connection.set_schema_to_public()
        records.flush()
    assert console.ok and turn.ok
    assert stored == {console.record_id}  # the turn's waits for the writer's batch
    assert row.source == "console" and row.outcome == "ok" and row.request_ids == console.request_ids
    assert str(console.record_id) not in journal._open  # stored: nothing of it left for recovery (issue 19)


def test_invoking_a_tool_removed_from_the_catalog_is_404(alpha):
    """A1: a tool the last sync removed cannot be invoked; the server is never called."""
    peer = FaultyPeer([ok_result()])
    with serve_asgi(peer.app()) as url:
        tool = certified_tool(alpha, url)
        with alpha.schema():
            version = CatalogVersion.objects.create(server=tool.server, number=2)
            Tool.objects.filter(pk=tool.pk).update(removed_in=version)
        connection.set_schema_to_public()
        response = alpha.api().post(f"/api/v1/tools/{tool.pk}/invoke", json.dumps({"arguments": {"consulta": "router"}}),
                                    content_type="application/json")
    assert response.status_code == 404 and response.json()["error"]["code"] == "not_found"
    assert peer.calls == []
