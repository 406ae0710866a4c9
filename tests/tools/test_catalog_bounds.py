"""Bounded work in a catalog sync (M5, A4): a server's listing is hostile input. Over the
tool limit the sync stops reading and fails with a clear error, keeping the last good catalog;
an oversized definition is a blocking finding and is not stored in full. Real SDK servers on
loopback, through the services; limits lowered with Django settings."""

import json

import pytest
from django.utils import translation

from asixto.errors import ApplicationError
from tests.support.mcp_servers import serve_asgi
from tests.support.mutable_catalog import MutableCatalog
from tests.tools.contract_samples import good
from tools.models import CatalogVersion, Finding, McpServer, Tool
from tools.services import catalog_sync, server_create


def register(world, url, slug="soporte"):
    with world.schema():
        return server_create(data={"slug": slug, "transport": "streamable_http", "url": f"{url}/mcp"})


def tools_named(count, prefix="consultar_caso"):
    return [good(f"{prefix}_{number:03d}") for number in range(count)]


def test_it_stops_reading_at_the_tool_limit_and_keeps_the_last_good_catalog(alpha, settings):
    """M5, A4: a paginated catalog that grows past the limit is refused after reading one tool
    more than the limit (not the whole listing); the error says what the limit is and the
    catalog stored before stays as it was."""
    settings.ASIXTO_MAX_TOOLS_PER_SERVER = 5
    catalog = MutableCatalog(tools_named(4))
    catalog.page_size = 2
    with serve_asgi(catalog.app()) as url:
        server = register(alpha, url)
        with alpha.schema():
            first = catalog_sync(server=server)
            before = list(Tool.objects.filter(server=server).values_list("pk", "name", "definition_hash", "certification"))
            catalog.tools = tools_named(40)
            catalog.pages_served = 0
            with translation.override("en"), pytest.raises(ApplicationError) as refused:
                catalog_sync(server=server)
            server = McpServer.objects.get(pk=server.pk)
            after = list(Tool.objects.filter(server=server).values_list("pk", "name", "definition_hash", "certification"))
            versions = list(CatalogVersion.objects.filter(server=server).values_list("pk", flat=True))
            with translation.override("en"):
                error, message = server.sync_error, str(refused.value.message)
    assert catalog.pages_served == 3  # six tools in pages of two: enough to know there are more than five
    assert "more than 5 tools" in message and "more than 5 tools" in error
    assert server.sync_status == "error"
    assert after == before and len(before) == 4 and versions == [first.pk]


def test_it_refuses_a_single_page_over_the_limit_and_stores_nothing(alpha, settings):
    """M5, A4: one tools/list page with more tools than the limit: nothing is stored, nothing
    is certified."""
    settings.ASIXTO_MAX_TOOLS_PER_SERVER = 5
    with serve_asgi(MutableCatalog(tools_named(12)).app()) as url:
        server = register(alpha, url)
        with alpha.schema():
            with pytest.raises(ApplicationError):
                catalog_sync(server=server)
            server.refresh_from_db()
            assert server.sync_status == "error"
            assert not CatalogVersion.objects.filter(server=server).exists()
            assert not Tool.objects.filter(server=server).exists()
            assert not Finding.objects.filter(server=server).exists()


def test_it_blocks_an_oversized_definition_without_storing_it(alpha, settings):
    """M5, A4: a definition over the size limit is kept as its name and size with a blocking
    finding; its neighbours are stored and certified as usual, and a re-sync of the same
    listing changes nothing."""
    settings.ASIXTO_MAX_TOOL_DEFINITION_BYTES = 4000
    huge = good("consultar_historial", description="Devuelve el historial del caso. " + "Detalle " * 2000)
    catalog = MutableCatalog([good("consultar_caso"), huge])
    with serve_asgi(catalog.app()) as url:
        server = register(alpha, url)
        with alpha.schema():
            catalog_sync(server=server)
            tools = {t.name: t for t in Tool.objects.filter(server=server).select_related("server").prefetch_related("findings")}
            again = catalog_sync(server=server)
            with translation.override("en"):
                messages = [f.message for f in tools["consultar_historial"].findings.all()]
    stored = tools["consultar_historial"]
    assert len(json.dumps(stored.definition)) < 4000 and "Detalle" not in json.dumps(stored.definition)
    assert stored.certification == "blocked" and not stored.is_available_to_agents
    assert [f.rule for f in stored.findings.all()] == ["M5"] and [f.severity for f in stored.findings.all()] == ["blocking"]
    assert "the limit is 4000" in messages[0]
    assert tools["consultar_caso"].certification == "certified"
    assert again.number == 1  # nothing changed: no new version (the oversized tool included)


def test_it_leaves_out_a_definition_the_database_cannot_hold_and_stores_the_rest(alpha):
    """M5, A4: a NUL character (which PostgreSQL text and jsonb cannot hold) in one definition
    leaves that definition out with a server finding; the sync succeeds with the others."""
    broken = good("consultar_historial", description="Devuelve el historial\x00 del caso.")
    with serve_asgi(MutableCatalog([good("consultar_caso"), broken]).app()) as url:
        server = register(alpha, url)
        with alpha.schema():
            version = catalog_sync(server=server)
            names = list(Tool.objects.filter(server=server).values_list("name", flat=True))
            with translation.override("en"):
                shown = version.server_findings
    assert names == ["consultar_caso"] and version.tool_count == 1
    assert [f["rule"] for f in shown] == ["M5"] and "#2: a NUL character" in shown[0]["message"]
