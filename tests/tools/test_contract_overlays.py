"""Contract modes and the admin's overlays against real servers (issue 8; M5, C3, C4, C5, C6, C8,
G2, G6, G9): server-everything (npm, TypeScript SDK 1.x) registered without a mode starts in
compatible mode, its safe tools answer through the gateway as they answer a direct call, the
admin's overlays made through the API survive the next sync, a plain-text `isError` reaches the
model and the record, and an unknown argument to an open schema never leaves the gateway."""

import json
import uuid

import pytest
from django.db import connection
from django.utils import translation

from tenants.models import ApprovedCommand
from tests.support.everything import ENTRY, NODE, everything_argv, requires_everything, serve_everything
from tests.support.mcp_servers import serve_asgi
from tests.support.mutable_catalog import MutableCatalog
from tools import mcp
from tools.gateway import CallContext, call_tool, flush_records
from tools.models import McpServer, Tool, ToolCall
from tools.servers import server_create
from tools.sync import catalog_sync


@pytest.fixture(autouse=True)
def english():
    with translation.override("en"):
        yield


def context():
    return CallContext(channel="chat", idempotency_key=f"test-{uuid.uuid4().hex}", conversation_id="cnv_1")


def everything_server(world):
    connection.set_schema_to_public()
    ApprovedCommand.objects.get_or_create(slug="everything", defaults={"executable": NODE, "base_args": [str(ENTRY), "stdio"]})
    with world.schema():
        server = server_create(data={"slug": "everything", "transport": "stdio", "command": "everything", "timeout_seconds": 20.0})
        catalog_sync(server=server)
        server.refresh_from_db()
        return server


def tool_named(world, name) -> Tool:
    with world.schema():
        return Tool.objects.select_related("server").prefetch_related("findings").get(prefixed_name=name, removed_in__isnull=True)


def gateway_call(world, name, arguments):
    with world.schema():
        outcome = call_tool(name=name, arguments=arguments, context=context())
        flush_records()
        return outcome, ToolCall.objects.get(pk=outcome.record_id)


@requires_everything
@pytest.mark.parametrize("transport", ["stdio", "sse"])
def test_server_everything_is_usable_after_the_first_sync_and_answers_as_a_direct_call(alpha, transport):
    """M5, C3, C4, C6, G2, issue 8: compatible mode by default; get-sum is available right after
    the first sync; the gateway returns the text a direct SDK call returns; an unknown argument
    to its (open) schema is refused before anything is sent."""
    if transport == "sse":
        with serve_everything("sse") as base_url:
            with alpha.schema():
                server = server_create(data={"slug": "everything", "transport": "sse", "url": f"{base_url}/sse"})
                catalog_sync(server=server)
            target = mcp.ServerTarget(transport="sse", url=f"{base_url}/sse", legacy=True)
            _check_everything(alpha, target)
        return
    everything_server(alpha)
    _check_everything(alpha, mcp.ServerTarget(transport="stdio", argv=everything_argv("stdio"), env={}, legacy=True))


def _check_everything(alpha, direct_target):
    with alpha.schema():
        server = McpServer.objects.get(slug="everything")
    assert server.contract_mode == McpServer.ContractMode.COMPATIBLE
    tool = tool_named(alpha, "everything__get-sum")
    assert tool.is_available_to_agents
    assert tool.definition["inputSchema"]["additionalProperties"] is False  # what the model is shown
    assert "additionalProperties" not in tool.server_definition["inputSchema"]

    outcome, record = gateway_call(alpha, "everything__get-sum", {"a": 2, "b": 40})
    direct = mcp.call_tool(direct_target, "get-sum", {"a": 2, "b": 40}, meta={})
    assert outcome.ok, (outcome.outcome, outcome.error)
    assert outcome.model_text == direct["content"][0]["text"] and "42" in outcome.model_text
    assert record.outcome == "ok"

    refused, record = gateway_call(alpha, "everything__get-sum", {"a": 2, "b": 40, "c": 1})
    assert refused.outcome == ToolCall.Outcome.INVALID_ARGUMENTS
    assert refused.attempts == 0 and refused.request_ids == []  # never sent
    assert "c" in refused.model_text and record.outcome == "invalid_arguments"


@requires_everything
def test_the_admins_overlays_through_the_api_survive_the_next_sync(alpha):
    """C5, C6, M7, issue 8: an overlay (verb, capabilities, description, level) set through the
    API is certified on the effective definition, keeps the server's description beside it,
    records who set the level, and stays after a re-sync; accepting the suggestions for the whole
    server turns every suggested verb into the admin's own."""
    server = everything_server(alpha)
    echo = tool_named(alpha, "everything__echo")
    connection.set_schema_to_public()
    response = alpha.api().patch(f"/api/v1/tools/{echo.pk}/overlay", json.dumps({
        "verb": "repetir un mensaje", "description": "Repite el mensaje que recibe. No sirve para nada más.",
        "level": "read", "capabilities": ["general"],
    }), content_type="application/json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["definition"]["description"].startswith("Repite el mensaje")
    assert body["server_definition"]["description"] == "Echoes back the input string"
    assert body["definition"]["_meta"]["com.asixto/verb"] == "repetir un mensaje"
    assert "com.asixto/suggested" not in body["definition"]["_meta"]
    assert body["overlay"]["level_set_by"].startswith("api-key:") and body["overlay"]["level_set_at"]
    assert body["certification"] == "certified"

    bad = alpha.api().patch(f"/api/v1/tools/{echo.pk}/overlay", json.dumps({"level": "omnipotent"}), content_type="application/json")
    assert bad.status_code == 400

    with alpha.schema():
        version = catalog_sync(server=McpServer.objects.get(pk=server.pk))
    again = tool_named(alpha, "everything__echo")
    assert again.overlay["verb"] == "repetir un mensaje"
    assert again.definition["_meta"]["com.asixto/verb"] == "repetir un mensaje"
    assert again.definition["description"].startswith("Repite el mensaje") and again.is_available_to_agents
    assert version.overlays["echo"]["verb"] == "repetir un mensaje"

    connection.set_schema_to_public()
    accepted = alpha.api().post(f"/api/v1/servers/{server.pk}/accept-suggestions", "{}", content_type="application/json")
    assert accepted.status_code == 200, accepted.content
    with alpha.schema():
        tools = list(Tool.objects.filter(server=server, removed_in__isnull=True))
    # All but the one whose suggested verb ("iniciar …") would block it (issue 20: confirm first).
    still = [t.name for t in tools if "com.asixto/suggested" in (t.definition.get("_meta") or {})]
    assert still == ["trigger-long-running-operation"]
    assert tool_named(alpha, "everything__get-sum").overlay["verb"] == "consultar la suma"

    # Strict mode through the API: what the gateway enforced itself blocks again (open schema).
    connection.set_schema_to_public()
    patched = alpha.api().patch(f"/api/v1/servers/{server.pk}", json.dumps({"contract_mode": "strict"}), content_type="application/json")
    assert patched.status_code == 200 and patched.json()["contract_mode"] == "strict"
    strict_sum = tool_named(alpha, "everything__get-sum")
    assert strict_sum.certification == "blocked" and "additionalProperties" not in strict_sum.definition["inputSchema"]
    assert strict_sum.definition["_meta"]["com.asixto/verb"] == "consultar la suma"  # the admin's overlay stays


PLAIN = {
    "name": "read_file", "description": "Read a file from disk.",
    "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    "annotations": {"readOnlyHint": True},
}
PLAIN_ERROR = {"isError": True, "content": [{"type": "text", "text": "ENOENT: no such file or directory, open '/srv/x.txt'"}]}


@pytest.mark.parametrize("mode", ["compatible", "strict"])
def test_a_plain_text_is_error_reaches_the_model_and_the_record(alpha, mode):
    """G6, G9, issue 8: in compatible mode a plain `isError` text is a business error whose text
    the model reads, marked as not in the contract's error shape; in strict mode it stays invalid
    output, and the record keeps the server's text either way."""
    catalog = MutableCatalog([PLAIN])
    catalog.results["read_file"] = [PLAIN_ERROR]
    with serve_asgi(catalog.app()) as url:
        with alpha.schema():
            server = server_create(data={"slug": "files", "transport": "streamable_http", "url": f"{url}/mcp"})
            catalog_sync(server=server)
            if mode == "strict":
                from tools.overlays import server_set_contract_mode

                server_set_contract_mode(server=McpServer.objects.get(pk=server.pk), mode="strict")
                # Strict blocks the tool (no _meta, open schema): certify by hand to reach the call path.
                Tool.objects.filter(server=server).update(certification="certified")
        outcome, record = gateway_call(alpha, "files__read_file", {"path": "/srv/x.txt"})
        console = alpha.dashboard("ana").post(f"/tools/{record.tool_id}/", {"arguments": json.dumps({"path": "/srv/x.txt"}), "channel": "chat"})
    assert "no such file or directory" in record.error
    # The console shows the server's own (cleaned) words, whatever the model was told (issue 8).
    assert "no such file or directory" in console.content.decode()
    if mode == "compatible":
        assert outcome.outcome == "business_error" and "no such file or directory" in outcome.model_text
        assert [v["kind"] for v in record.violations if v["kind"] == "error_shape"] == ["error_shape"]
        assert record.outcome == "business_error"
    else:
        assert outcome.outcome == "invalid_output" and "no such file" not in outcome.model_text


def test_open_nodes_is_no_write_but_abrir_caso_soporte_is():
    """C5, issue 8: "open" reads unless it opens a record; "abrir" always writes."""
    from tools.rules.annotations import check_annotations

    read_only = {"readOnlyHint": True}
    assert not [f for f in check_annotations(read_only, name="open_nodes") if f.blocking]
    assert [f for f in check_annotations(read_only, name="abrir_caso_soporte") if f.blocking]
    assert [f for f in check_annotations(read_only, name="open_ticket") if f.blocking]
    # A read-only tool is never asked for destructive or idempotent hints (C9 needs readOnlyHint: false).
    assert not check_annotations(read_only, name="get_current_time")


def test_suggested_verbs_in_the_tenants_language():
    """C6, issue 8: deterministic suggestions from the name, in Spanish or English."""
    from tools.rules.suggestions import suggest_capabilities, suggest_verb

    assert suggest_verb(name="get_current_time", language="es") == "consultar la hora actual"
    assert suggest_verb(name="get_current_time", language="en") == "get the current time"
    assert suggest_verb(name="echo", title="Echo Tool", language="es") == "repetir"
    # "open" that only reads is not suggested as "abrir", which the C5 rule reads as a write.
    assert suggest_verb(name="open_nodes", language="es") == "consultar los nodos"
    assert suggest_verb(name="open_ticket", language="es") == "abrir el ticket"
    # mcp-server-git's names: Spanish contracts "a el" (issue 8).
    assert suggest_verb(name="git_checkout", language="es") == "cambiar al git"
    assert suggest_verb(name="navigate_page", language="es") == "navegar a la página"
    assert suggest_capabilities(name="crear_caso_soporte", scenarios=["ventas", "soporte"]) == ["soporte"]
    assert suggest_capabilities(name="x", scenarios=None) == ["general"]


def test_a_tool_that_requires_mcp_tasks_is_blocked_with_a_clear_finding():
    """G4, issue 8: execution.taskSupport "required" blocks in both modes."""
    from tools.rules import certify_definition

    definition = {**PLAIN, "execution": {"taskSupport": "required"}}
    for compatible in (True, False):
        findings = certify_definition(definition, server_slug="files", scenarios=None, compatible=compatible)
        assert [f.rule for f in findings if f.blocking and f.rule == "G4"] == ["G4"]


@requires_everything
def test_the_contract_page_edits_many_overlays_in_one_form_and_shows_shared_warnings_once(alpha):
    """A2, C3, C6, issue 8: the server's contract page lists every tool in one table; a warning
    all 13 tools share is one server-level row there, on the catalog and in the API; one POST
    stores several tools' overlays; support staff cannot change them."""
    server = everything_server(alpha)
    client = alpha.dashboard("ana")
    page = client.get(f"/servers/{server.pk}/contract/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert page.count("everything__") >= 13
    open_schema = "The inputSchema is open; the gateway closes it"
    assert page.count(open_schema) == 1 and "13 of 13 tools" in page
    catalog = client.get("/catalog/?server=everything", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert catalog.count(open_schema) == 1
    connection.set_schema_to_public()
    shared = alpha.api().get(f"/api/v1/servers/{server.pk}").json()["shared_findings"]
    assert any(entry["rule"] == "C3" and entry["count"] == 13 for entry in shared)

    echo, get_sum = tool_named(alpha, "everything__echo"), tool_named(alpha, "everything__get-sum")
    env = tool_named(alpha, "everything__get-env")
    form = {"contract_mode": "compatible", f"verb-{echo.pk}": "repetir un texto", f"level-{get_sum.pk}": "write",
            f"accept-{env.pk}": "1"}
    assert alpha.dashboard("sam").post(f"/servers/{server.pk}/contract/", form).status_code == 403
    response = client.post(f"/servers/{server.pk}/contract/", form)
    assert response.status_code == 302
    echo, get_sum = tool_named(alpha, "everything__echo"), tool_named(alpha, "everything__get-sum")
    assert echo.overlay["verb"] == "repetir un texto" and echo.definition["_meta"]["com.asixto/verb"] == "repetir un texto"
    assert get_sum.level == "write" and get_sum.overlay["level_set_by"] == "ana"
    assert "verb" not in get_sum.overlay  # an untouched suggestion stays a suggestion
    env = tool_named(alpha, "everything__get-env")
    assert env.overlay["verb"] == "consultar el entorno" and env.overlay["capabilities"] == ["general"]
    assert "com.asixto/suggested" not in env.definition["_meta"]


def test_a_credential_in_a_description_blocks_in_both_modes():
    """C2, issue 8: what the gateway cannot take back stays blocking in compatible mode too."""
    from tools.rules import certify_definition

    definition = {**PLAIN, "description": "Read a file. Authenticate with sk_live_51HxYzAbCdEfGhIjKlMnOpQr."}
    for compatible in (True, False):
        findings = certify_definition(definition, server_slug="files", scenarios=None, compatible=compatible)
        assert "C2" in [f.rule for f in findings if f.blocking]
