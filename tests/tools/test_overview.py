"""The overview (A2): servers by sync state, tools by verdict, calls and failures of the last 24
hours and the latest contract violations, each linked to the list behind it; and the call
record page (G9): arguments, the cleaned result, exactly what the model read, attempts."""

import json
import uuid
from datetime import timedelta

from django.utils import timezone

from tests.support.faults import FaultyPeer
from tests.support.mcp_servers import serve_asgi
from tests.tools.gateway_support import certified_tool, context, ok_result
from tools.gateway import call_tool, flush_records
from tools.models import McpServer, Tool, ToolCall


def _call(tool_name, outcome, *, hours_ago=1, violations=()):
    return ToolCall.objects.create(
        tool_name=tool_name, channel="chat", idempotency_key=uuid.uuid4().hex, outcome=outcome,
        started_at=timezone.now() - timedelta(hours=hours_ago), violations=list(violations),
    )


def _server(slug, status):
    return McpServer.objects.create(slug=slug, transport="streamable_http", url=f"https://{slug}.example.com/mcp", sync_status=status)


def _tool(server, name, certification):
    return Tool.objects.create(
        server=server, name=name, prefixed_name=f"{server.slug}__{name}", position=0, definition={"name": name},
        definition_hash="h", certified_hash="h", level="read", certification=certification,
    )


def test_it_answers_everything_is_fine_when_it_is(alpha):
    """A2: a model, synced servers, certified tools and clean calls give the all-clear."""
    alpha.tenant.model_base_url, alpha.tenant.model_name = "https://models.example.com/v1", "qwen2.5"
    alpha.tenant.save(update_fields=["model_base_url", "model_name"])
    with alpha.schema():
        server = _server("crm", McpServer.SyncStatus.OK)
        _tool(server, "buscar", Tool.Certification.CERTIFIED)
        _call("crm__buscar", "ok")
    page = alpha.dashboard("sam").get("/", HTTP_ACCEPT_LANGUAGE="en")
    assert page.context["attention"] == 0
    assert "Everything is fine" in page.content.decode()
    with alpha.schema():
        _server("erp", McpServer.SyncStatus.NEVER)
    page = alpha.dashboard("sam").get("/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Everything is fine" not in page and "1 server has not finished a sync yet" in page


def test_it_counts_what_needs_attention_and_links_to_it(alpha):
    """A2, G9: a failing server, a blocked tool, failures and violations within 24 hours are
    counted (older calls are not), and each number links to its list; the missing model is the
    fifth problem."""
    with alpha.schema():
        ok, broken = _server("crm", McpServer.SyncStatus.OK), _server("erp", McpServer.SyncStatus.ERROR)
        _tool(ok, "buscar", Tool.Certification.CERTIFIED)
        _tool(broken, "Borrar", Tool.Certification.BLOCKED)
        _tool(broken, "listar", Tool.Certification.PENDING)
        _call("crm__buscar", "ok")
        _call("crm__buscar", "business_error")
        _call("crm__buscar", "timeout")
        violating = _call("crm__buscar", "ok", violations=[{"kind": "leak:token", "detail": "a token"}])
        _call("crm__buscar", "timeout", hours_ago=30)
    response = alpha.dashboard("ana").get("/", HTTP_ACCEPT_LANGUAGE="en")
    data, page = response.context, response.content.decode()
    assert data["calls"] == {"total": 4, "failed": 1, "violations": 1}
    assert {row["value"]: row["count"] for row in data["servers"]}["error"] == 1
    assert {row["value"]: row["count"] for row in data["tools"]} == {"pending": 1, "certified": 1, "blocked": 1}
    assert data["attention"] == 1 + 1 + 1 + 1 + 1
    assert "5 things need attention" in page
    assert "/catalog/?certification=blocked" in page and "/calls/?outcome=timeout" in page
    assert "/calls/?violations=true" in page and f"/calls/{violating.pk}/" in page


def test_it_shows_another_tenant_nothing(alpha, beta):
    """T1: beta's overview counts none of alpha's servers or calls."""
    with alpha.schema():
        _server("crm", McpServer.SyncStatus.ERROR)
        _call("crm__buscar", "timeout")
    data = beta.dashboard("ana").get("/").context
    assert data["server_total"] == 0 and data["calls"]["total"] == 0


def test_the_call_record_shows_arguments_the_cleaned_result_the_model_text_and_attempts(alpha):
    """G9, T7: the record page has what was sent, what came back with the server's secret cleaned
    out, exactly what the model read, and each attempt with its request id and time."""
    api_key = "k3y-Secreto-9f8e7d6c"
    data = {"productos": [{"nombre": f"Router {api_key}"}], "total": 1}
    peer = FaultyPeer([ok_result("Encontré el Router AX.", data)])
    peer.drop_first = 1  # the first attempt drops: two attempts, one answer
    with serve_asgi(peer.app()) as url:
        tool = certified_tool(alpha, url)
        with alpha.schema():
            McpServer.objects.filter(pk=tool.server_id).update(auth_headers=json.dumps({"X-Api-Key": api_key}))
            outcome = call_tool(name=tool.prefixed_name, arguments={"consulta": "router"}, context=context())
            flush_records()
            record = ToolCall.objects.get(pk=outcome.record_id)
    assert outcome.ok and record.attempts == 2 and len(record.attempt_ms) == 2
    assert record.model_text == outcome.model_text == "Encontré el Router AX."
    assert record.result == {"productos": [{"nombre": "Router [redacted]"}], "total": 1}
    page = alpha.dashboard("sam").get(f"/calls/{record.pk}/").content.decode()
    assert api_key not in page
    assert "Router [redacted]" in page and "Encontré el Router AX." in page and "&quot;consulta&quot;: &quot;router&quot;" in page
    for request_id in record.request_ids:
        assert request_id in page
    api = alpha.api().get(f"/api/v1/tool-calls/{record.pk}").json()
    assert api["model_text"] == record.model_text and api["result"] == record.result and len(api["attempt_ms"]) == 2


def test_the_record_keeps_only_the_start_of_a_huge_result(alpha):
    """G9: a record does not grow with what a server sends: past the bound, the start of its JSON."""
    peer = FaultyPeer([ok_result("Muchos.", {"productos": [{"nombre": "x" * 100}] * 1000, "total": 1000})])
    with serve_asgi(peer.app()) as url:
        tool = certified_tool(alpha, url)
        with alpha.schema():
            outcome = call_tool(name=tool.prefixed_name, arguments={"consulta": "x"}, context=context())
            flush_records()
            record = ToolCall.objects.get(pk=outcome.record_id)
    assert set(record.result) == {"cut_at_chars", "json_start"} and len(record.result["json_start"]) == record.result["cut_at_chars"]
