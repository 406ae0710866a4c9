"""Catalog sync (M5, M6, M7, C7) and certification verdicts (C1–C6) against real SDK servers on
loopback, through the services."""

import pytest
from django.db import connection

from examples.soporte.server import build_app
from tests.support.mcp_servers import serve_asgi
from tests.support.mutable_catalog import MutableCatalog
from tests.tools.contract_samples import broken_per_rule, good
from tools import mcp
from tools.models import CatalogVersion, McpServer, Tool
from tools.services import catalog_sync, server_create


def register(world, url, slug="soporte"):
    with world.schema():
        return server_create(data={"slug": slug, "transport": "streamable_http", "url": f"{url}/mcp"})


@pytest.fixture
def scenarios(alpha):
    # The tenant object lives for the whole session: put its scenarios back afterwards (the
    # database row is rolled back with the test's transaction, the object is not).
    before = alpha.tenant.scenarios
    connection.set_schema_to_public()
    alpha.tenant.scenarios = ["soporte", "pqr", "garantia", "ventas"]
    alpha.tenant.save(update_fields=["scenarios"])
    yield alpha.tenant.scenarios
    alpha.tenant.scenarios = before


def test_it_syncs_and_certifies_the_example_server(alpha, scenarios):
    """M4, M5, M6, M7, C1–C6: the contract-compliant example is synced in order, prefixed,
    levelled and certified, with the discovery cached."""
    with serve_asgi(build_app()) as url:
        server = register(alpha, url)
        with alpha.schema():
            version = catalog_sync(server=server)
            server.refresh_from_db()
            tools = list(Tool.objects.filter(server=server).select_related("server").prefetch_related("findings").order_by("position"))
    assert server.protocol_version == "2026-07-28" and not server.is_legacy and server.discover_result
    assert server.sync_status == "ok"
    assert [t.name for t in tools] == ["abrir_caso_soporte", "consultar_caso", "buscar_producto"]
    assert [t.prefixed_name for t in tools][0] == "soporte__abrir_caso_soporte"
    assert [t.level for t in tools] == ["write", "read", "read"]
    assert all(t.certification == "certified" and t.is_available_to_agents for t in tools), [
        (t.name, [f.message for f in t.findings.all()]) for t in tools
    ]
    assert tools[0].definition["_meta"]["com.asixto/verb"] == "abrir un caso de soporte"
    assert version.number == 1 and version.diff["added"] == [t.name for t in tools]


def test_it_records_each_broken_rule_and_keeps_blocked_tools_from_agents(alpha, scenarios):
    """C1–C6: each broken rule gives its finding; blocking ones keep the tool away from agents."""
    broken = broken_per_rule()
    definitions = [good(name=f"crear_caso_{rule.lower()}") if rule != "C1" else broken[rule] for rule in broken]
    for index, rule in enumerate(broken):
        if rule != "C1":
            definitions[index] = {**broken[rule], "name": f"crear_caso_{rule.lower()}"}
    with serve_asgi(MutableCatalog(definitions).app()) as url:
        server = register(alpha, url, slug="malo")
        with alpha.schema():
            catalog_sync(server=server)
            tools = {t.name: t for t in Tool.objects.filter(server=server).select_related("server").prefetch_related("findings")}
    names = [d["name"] for d in definitions]
    for rule, name in zip(broken, names):
        rules = {f.rule for f in tools[name].findings.all()}
        assert rule in rules, (rule, name, rules)
    blocked = {name for name, tool in tools.items() if tool.certification == "blocked"}
    assert blocked == {"crear_caso_c3", "crear_caso_c4", "crear_caso_c5", "crear_caso_c6"}
    assert not any(tools[name].is_available_to_agents for name in blocked)
    assert tools["CasoSoporte"].is_available_to_agents and tools["crear_caso_c2"].is_available_to_agents


def test_it_versions_changes_and_recertifies_only_what_changed(alpha, scenarios):
    """M5, C7: a change (annotations included), an addition, a removal and a rename each show in
    the diff; changed and new tools get a new verdict; a renamed tool is a new tool."""
    catalog = MutableCatalog([good("abrir_caso_soporte"), good("crear_cita"), good("mover_etapa")])
    with serve_asgi(catalog.app()) as url:
        server = register(alpha, url)
        with alpha.schema():
            catalog_sync(server=server)
            first_ids = dict(Tool.objects.values_list("name", "pk"))
            catalog.tools[0]["annotations"] = {**catalog.tools[0]["annotations"], "readOnlyHint": True}
            catalog.tools[1]["name"] = "agendar_cita"  # renamed
            catalog.tools.pop(2)
            catalog.tools.append(good("cancelar_cita"))
            version = catalog_sync(server=server)
            live = {t.name: t for t in Tool.objects.filter(removed_in__isnull=True)}
            removed = set(Tool.objects.filter(removed_in=version).values_list("name", flat=True))
    assert version.number == 2
    assert version.diff["added"] == ["agendar_cita", "cancelar_cita"]
    assert set(version.diff["removed"]) == {"crear_cita", "mover_etapa"} == removed
    assert version.diff["changed"] == [{"name": "abrir_caso_soporte", "fields": ["annotations.readOnlyHint"]}]
    assert live["abrir_caso_soporte"].pk == first_ids["abrir_caso_soporte"]
    assert live["abrir_caso_soporte"].certification == "blocked"  # now claims read-only while opening cases (C5)
    assert live["agendar_cita"].pk not in first_ids.values()
    assert list(live) == ["abrir_caso_soporte", "agendar_cita", "cancelar_cita"]


def test_it_reports_an_unstable_order(alpha, scenarios):
    """C7, M5: the list is read twice; a different order is a finding on the version."""
    catalog = MutableCatalog([good("abrir_caso_soporte"), good("crear_cita")])
    catalog.reorder_on_each_list = True
    with serve_asgi(catalog.app()) as url:
        server = register(alpha, url)
        with alpha.schema():
            version = catalog_sync(server=server)
    assert [f["rule"] for f in version.server_findings] == ["C7"]
    assert catalog.list_calls == 2


def test_it_keeps_the_last_good_catalog_when_a_sync_fails(alpha, scenarios):
    """M5, A4: a failing sync records the error and changes nothing already stored."""
    catalog = MutableCatalog([good("abrir_caso_soporte")])
    with serve_asgi(catalog.app()) as url:
        server = register(alpha, url)
        with alpha.schema():
            catalog_sync(server=server)
    with alpha.schema():  # the server is gone now
        with pytest.raises(mcp.McpError):
            catalog_sync(server=server)
        server.refresh_from_db()
        assert server.sync_status == "error" and server.sync_error
        assert CatalogVersion.objects.filter(server=server).count() == 1
        assert Tool.objects.get(server=server).certification == "certified"


def test_it_flags_prefixed_names_over_64_characters(alpha, scenarios):
    """M6: the model-visible name `<slug>__<name>` is at most 64 characters."""
    long_name = "consultar_" + "x" * 50
    with serve_asgi(MutableCatalog([good(long_name)]).app()) as url:
        server = register(alpha, url, slug="inventario_central")
        with alpha.schema():
            catalog_sync(server=server)
            tool = Tool.objects.select_related("server").prefetch_related("findings").get(server=server)
    assert len(tool.prefixed_name) > 64
    assert "M6" in {f.rule for f in tool.findings.all()} and tool.certification == "blocked"


def test_it_keeps_each_tenants_catalog_in_its_own_schema(alpha, beta, scenarios):
    """T1, M6: two tenants (and two servers) may both have a buscar_producto; nothing crosses."""
    with serve_asgi(build_app()) as url:
        server = register(alpha, url)
        with alpha.schema():
            catalog_sync(server=server)
    with beta.schema():
        assert McpServer.objects.count() == 0 and Tool.objects.count() == 0
    with alpha.schema():
        assert Tool.objects.filter(name="buscar_producto").count() == 1
