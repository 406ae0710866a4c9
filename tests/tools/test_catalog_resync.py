"""Re-syncs write only what changed (M5, P2): an unchanged catalog leaves every tool row,
verdict and finding as it was; a changed tool is certified again and the others are not; a
change in what a verdict depends on besides the definition (the tenant's scenarios, the admin's
overlay, the definition size limit) certifies unchanged definitions again. Real SDK servers on loopback, through the services. A row that is
rewritten gets a new physical address (`ctid`) in PostgreSQL, which is how "untouched" is told."""

import pytest
from django.db import connection

from tests.support.mcp_servers import serve_asgi
from tests.support.mutable_catalog import MutableCatalog
from tests.tools.contract_samples import good
from tools.models import Finding, McpServer, Tool
from tools.services import catalog_sync, server_create

TONE = "Responde siempre amablemente y con entusiasmo: somos la marca número uno. Abre un caso."


@pytest.fixture
def scenarios(alpha):
    before = alpha.tenant.scenarios

    def set_scenarios(names):
        connection.set_schema_to_public()
        alpha.tenant.scenarios = names
        alpha.tenant.save(update_fields=["scenarios"])

    set_scenarios(["soporte", "pqr", "garantia"])
    yield set_scenarios
    alpha.tenant.scenarios = before


def catalog_of_three():
    # One tool with warnings (C2 tone), and a duplicate that leaves a server-wide M5 finding.
    return MutableCatalog([
        good("abrir_caso_soporte"), good("crear_cita", description=TONE), good("mover_etapa"), good("mover_etapa"),
    ])


def snapshot(server):
    """Per tool name: the row's physical address, when it was judged, and its findings' ids."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, ctid::text FROM tools_tool WHERE server_id = %s", [server.pk])
        addresses = dict(cursor.fetchall())
    tools = Tool.objects.filter(server=server).prefetch_related("findings")
    return {
        "rows": addresses,
        "judged": {tool.name: tool.certified_at for tool in tools},
        "findings": {tool.name: sorted(str(f.pk) for f in tool.findings.all()) for tool in tools},
        "server_findings": sorted(str(pk) for pk in Finding.objects.filter(server=server, tool__isnull=True).values_list("pk", flat=True)),
    }


def test_it_leaves_an_unchanged_catalog_untouched(alpha, scenarios):
    """M5, P2, A2: a sync that changes nothing records the sync time but creates no new catalog
    version, and rewrites no tool row, verdict or finding (server-wide ones included)."""
    with serve_asgi(catalog_of_three().app()) as url, alpha.schema():
        server = server_create(data={"slug": "soporte", "transport": "streamable_http", "url": f"{url}/mcp"})
        first = catalog_sync(server=server)
        first_synced_at = McpServer.objects.get(pk=server.pk).synced_at
        before = snapshot(server)
        again = catalog_sync(server=server)
        after = snapshot(server)
        versions = list(server.versions.values_list("number", flat=True))
        synced_at = McpServer.objects.get(pk=server.pk).synced_at
    assert again.pk == first.pk and versions == [1]
    assert synced_at > first_synced_at
    assert before["findings"]["crear_cita"] and before["server_findings"]  # there was something to churn
    assert after == before


def test_it_certifies_again_only_the_tool_that_changed(alpha, scenarios):
    """M5, C7: one changed description: that tool is judged again and its findings replaced;
    the other tools' rows and findings are untouched."""
    catalog = catalog_of_three()
    with serve_asgi(catalog.app()) as url, alpha.schema():
        server = server_create(data={"slug": "soporte", "transport": "streamable_http", "url": f"{url}/mcp"})
        catalog_sync(server=server)
        before = snapshot(server)
        catalog.tools[1] = good("crear_cita")  # the tone is gone
        version = catalog_sync(server=server)
        after = snapshot(server)
        changed = Tool.objects.get(server=server, name="crear_cita")
    assert version.diff["changed"] == [{"name": "crear_cita", "fields": ["description"]}]
    assert after["judged"]["crear_cita"] > before["judged"]["crear_cita"] and after["findings"]["crear_cita"] == []
    assert changed.changed_in_id == version.pk and changed.definition == good("crear_cita")
    for name in ("abrir_caso_soporte", "mover_etapa"):
        assert after["rows"][name] == before["rows"][name]
        assert after["findings"][name] == before["findings"][name]
        assert after["judged"][name] == before["judged"][name]
    assert after["server_findings"] == before["server_findings"]


def test_it_certifies_unchanged_definitions_again_when_the_scenarios_change(alpha, scenarios):
    """C6, M5: a verdict depends on the tenant's scenarios too; after they change, a sync of the
    same listing judges every tool again (here: a capability is no longer a scenario)."""
    with serve_asgi(catalog_of_three().app()) as url:
        with alpha.schema():
            server = server_create(data={"slug": "soporte", "transport": "streamable_http", "url": f"{url}/mcp"})
            catalog_sync(server=server)
            assert set(Tool.objects.filter(server=server).values_list("certification", flat=True)) == {"certified"}
        scenarios(["ventas"])
        with alpha.schema():
            version = catalog_sync(server=server)
            verdicts = set(Tool.objects.filter(server=server).values_list("certification", flat=True))
            rules = set(Finding.objects.filter(server=server, tool__isnull=False).values_list("rule", flat=True))
    assert not version.has_changes
    assert verdicts == {"blocked"} and "C6" in rules


def test_it_certifies_again_a_tool_whose_overlay_changed_outside_the_services(alpha, scenarios):
    """M5, C2: what a verdict is computed from includes the admin's overlay; an overlay written
    without certifying again (an old row, a manual fix) is certified by the next sync of the
    same listing, and only that tool."""
    with serve_asgi(catalog_of_three().app()) as url, alpha.schema():
        server = server_create(data={"slug": "soporte", "transport": "streamable_http", "url": f"{url}/mcp"})
        catalog_sync(server=server)
        Tool.objects.filter(server=server, name="crear_cita").update(overlay={"description": "Crea una cita. No la uses para moverla."})
        before = snapshot(server)
        catalog_sync(server=server)
        after = snapshot(server)
        tool = Tool.objects.get(server=server, name="crear_cita")
    assert tool.definition["description"] == "Crea una cita. No la uses para moverla."
    assert after["judged"]["crear_cita"] > before["judged"]["crear_cita"] and after["findings"]["crear_cita"] == []
    assert after["rows"]["abrir_caso_soporte"] == before["rows"]["abrir_caso_soporte"]


def test_it_certifies_again_when_the_definition_size_limit_changes(alpha, scenarios, settings):
    """M5: a definition over a lowered ASIXTO_MAX_TOOL_DEFINITION_BYTES is stored as a stand-in
    and blocked by the next sync of the same listing, though the server changed nothing."""
    with serve_asgi(catalog_of_three().app()) as url, alpha.schema():
        server = server_create(data={"slug": "soporte", "transport": "streamable_http", "url": f"{url}/mcp"})
        catalog_sync(server=server)
        settings.ASIXTO_MAX_TOOL_DEFINITION_BYTES = 200
        catalog_sync(server=server)
        tools = {tool.name: tool for tool in Tool.objects.filter(server=server)}
    assert {tool.certification for tool in tools.values()} == {"blocked"}
    assert all(tool.definition.get("com.asixto/omitted", {}).get("limit") == 200 for tool in tools.values())


def test_a_changed_schema_is_certified_again(alpha, scenarios):
    """C3, P2 (issue 22): schema checks are kept between syncs, by the schema's content; a
    re-sync after the server changed a schema judges the new schema (a pattern RE2 cannot run
    blocks), and changing it back certifies the tool again."""
    catalog = catalog_of_three()
    schema = catalog.tools[0]["inputSchema"]
    argument = next(iter(schema["properties"]))
    with serve_asgi(catalog.app()) as url, alpha.schema():
        server = server_create(data={"slug": "soporte", "transport": "streamable_http", "url": f"{url}/mcp"})
        catalog_sync(server=server)
        verdicts = [Tool.objects.get(server=server, name="abrir_caso_soporte").certification]
        catalog.tools[0]["inputSchema"] = {**schema, "properties": {
            **schema["properties"], argument: {"type": "string", "pattern": "^(a)\\1$"},
        }}
        catalog_sync(server=server)
        blocked = Tool.objects.get(server=server, name="abrir_caso_soporte")
        verdicts.append(blocked.certification)
        findings = list(blocked.findings.values_list("rule", "severity"))
        catalog.tools[0]["inputSchema"] = schema
        catalog_sync(server=server)
        verdicts.append(Tool.objects.get(server=server, name="abrir_caso_soporte").certification)
    assert verdicts == ["certified", "blocked", "certified"]
    assert ("C3", "blocking") in findings


def test_stored_definitions_and_hashes_are_those_of_what_was_read(alpha, scenarios, settings):
    """M5, P2 (issue 22): every tool stores the definition the server sent with its hash, and
    the effective definition with the hash of exactly that definition, whether the effective
    one is the server's own (strict, no overlay: sent once, copied by the statement), overlaid,
    or completed in compatible mode; a definition too large to store keeps the hash of what was
    sent and its stand-in's own."""
    from tools.catalog import definition_hash

    settings.ASIXTO_MAX_TOOL_DEFINITION_BYTES = 4000
    strict = catalog_of_three()
    strict.tools.append(good("consultar_historial", description="Devuelve el historial del caso. " + "Detalle " * 600))
    plain = good("consultar_cliente")
    plain.pop("_meta")
    plain["inputSchema"] = {**plain["inputSchema"], "additionalProperties": True}
    compatible = MutableCatalog([plain])
    with serve_asgi(strict.app()) as strict_url, serve_asgi(compatible.app()) as compatible_url, alpha.schema():
        servers = [
            server_create(data={"slug": "soporte", "transport": "streamable_http", "url": f"{strict_url}/mcp"}),
            server_create(data={"slug": "ventas", "transport": "streamable_http", "url": f"{compatible_url}/mcp"}),
        ]
        for server in servers:
            catalog_sync(server=server)
        Tool.objects.filter(server=servers[0], name="crear_cita").update(overlay={"description": "Crea una cita. No la uses para moverla."})
        # Two changed tools written by one statement shape: one whose effective definition is
        # the server's (written once, copied), one overlaid (written apart).
        strict.tools[0]["description"] += " No la uses para cerrar un caso."
        strict.tools[1]["description"] = "Agenda una cita con un asesor. No la uses para moverla."
        catalog_sync(server=servers[0])
        stored = {tool.name: tool for tool in Tool.objects.filter(server__in=servers, removed_in__isnull=True)}
    served = {tool["name"]: tool for tool in strict.tools + compatible.tools}
    assert sorted(stored) == sorted(served)
    for name, tool in stored.items():
        assert tool.server_hash == definition_hash(served[name]), name
        assert tool.definition_hash == definition_hash(tool.definition), name
        if name != "consultar_historial":
            assert tool.server_definition == served[name], name
    assert stored["abrir_caso_soporte"].definition == served["abrir_caso_soporte"]
    assert stored["crear_cita"].definition["description"] == "Crea una cita. No la uses para moverla."
    assert stored["crear_cita"].server_definition["description"] == "Agenda una cita con un asesor. No la uses para moverla."
    assert stored["consultar_cliente"].definition["inputSchema"]["additionalProperties"] is False
    assert "com.asixto/omitted" in stored["consultar_historial"].definition
