"""Names the model sees (M6): `<server slug>__<tool name>` must name exactly one live tool.

Slugs may not contain `__` nor start or end with `_`, so the first `__` of a prefixed name is
always the separator and two (slug, tool) pairs can never give the same name; the database
holds both rules (a check on slugs, a unique index on live prefixed names), so rows written
around the forms and serializers cannot break them either."""

import importlib
import json

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.loader import MigrationLoader

from tests.support.mcp_servers import serve_asgi
from tests.support.mutable_catalog import MutableCatalog
from tests.tools.contract_samples import good
from tools.catalog import definition_hash
from tools.gateway.call import find_tool
from tools.models import McpServer, Tool
from tools.services import catalog_sync, server_create

URL = "https://93.184.216.34/mcp"
BAD_SLUGS = ["crm__pagos", "crm_", "_crm", "crm___x", "Crm", "1crm", "crm-x", "a" * 21]
GOOD_SLUGS = ["crm", "crm_pagos", "c", "a1_b2_c3", "a" * 20]


def _tool(server, name, *, removed_in=None, model=Tool):
    definition = good(name)
    return model.objects.create(
        server=server, name=name, prefixed_name=f"{server.slug}__{name}", position=0, definition=definition,
        definition_hash=definition_hash(definition), level="read", certification="certified",
        certified_hash=definition_hash(definition), removed_in=removed_in,
    )


@pytest.mark.parametrize("slug", BAD_SLUGS)
def test_the_api_refuses_slugs_that_could_make_names_collide(alpha, slug):
    """M6, A4: a slug with `__`, or starting or ending with `_`, is a field error."""
    body = json.dumps({"slug": slug, "transport": "streamable_http", "url": URL})
    response = alpha.api().post("/api/v1/servers", body, content_type="application/json")
    assert response.status_code == 400, response.content
    assert "slug" in response.json()["error"]["fields"]


@pytest.mark.parametrize("slug", GOOD_SLUGS)
def test_the_api_accepts_single_underscores(alpha, slug):
    """M6: snake_case slugs stay valid."""
    body = json.dumps({"slug": slug, "transport": "streamable_http", "url": URL})
    assert alpha.api().post("/api/v1/servers", body, content_type="application/json").status_code == 201


def test_the_dashboard_form_refuses_the_same_slugs(alpha):
    """M6, A2: one rule for the form and the API."""
    client = alpha.dashboard("ana")
    for slug in BAD_SLUGS:
        response = client.post("/servers/new/", {
            "slug": slug, "transport": "streamable_http", "url": URL, "timeout_seconds": "10", "enabled": "on",
        })
        assert response.status_code == 200 and "slug" in response.context["form"].errors, slug
    with alpha.schema():
        assert not McpServer.objects.exists()


def test_the_database_refuses_bad_slugs_written_around_the_validators(alpha):
    """M6: services and scripts that skip validation still cannot store such a slug."""
    with alpha.schema():
        for slug in ("crm__pagos", "crm_", "_crm", "crm\n"):
            with pytest.raises(IntegrityError), transaction.atomic():
                McpServer.objects.create(slug=slug, transport="streamable_http", url=URL)


def test_the_database_keeps_live_prefixed_names_unique(alpha):
    """M6: a second live tool with a name the model already sees is refused; a removed one may
    share it (records keep pointing at it), and the lookup finds the live tool."""
    with alpha.schema():
        crm = McpServer.objects.create(slug="crm", transport="streamable_http", url=URL)
        other = McpServer.objects.create(slug="erp", transport="streamable_http", url=URL)
        live = _tool(crm, "consultar_pago")
        with pytest.raises(IntegrityError), transaction.atomic():
            Tool.objects.create(
                server=other, name="x", prefixed_name="crm__consultar_pago", position=0, definition={},
                definition_hash="0", level="read",
            )
        from tools.models import CatalogVersion

        version = CatalogVersion.objects.create(server=other, number=1)
        Tool.objects.create(
            server=other, name="y", prefixed_name="crm__consultar_pago", position=1, definition={},
            definition_hash="0", level="read", removed_in=version,
        )
        assert find_tool(name="crm__consultar_pago").pk == live.pk


def test_the_reviewers_collision_cannot_be_registered(alpha):
    """M6: slug `crm` + tool `pagos__x` is synced; slug `crm__pagos` (+ tool `x`) is refused, so
    `crm__pagos__x` names exactly one tool."""
    catalog = MutableCatalog([good("pagos__x")])
    with serve_asgi(catalog.app()) as url:
        with alpha.schema():
            catalog_sync(server=server_create(data={"slug": "crm", "transport": "streamable_http", "url": f"{url}/mcp"}))
        connection.set_schema_to_public()
        body = json.dumps({"slug": "crm__pagos", "transport": "streamable_http", "url": f"{url}/mcp"})
        assert alpha.api().post("/api/v1/servers", body, content_type="application/json").status_code == 400
    with alpha.schema():
        assert list(Tool.objects.filter(prefixed_name="crm__pagos__x").values_list("server__slug", flat=True)) == ["crm"]


def test_a_resync_keeps_working_under_the_unique_index(alpha):
    """M5, M6: removing, re-adding and renaming tools across syncs never trips the index."""
    catalog = MutableCatalog([good("consultar_pago"), good("crear_pago")])
    with serve_asgi(catalog.app()) as url, alpha.schema():
        server = server_create(data={"slug": "crm", "transport": "streamable_http", "url": f"{url}/mcp"})
        catalog_sync(server=server)
        catalog.tools.pop(0)
        catalog_sync(server=server)
        catalog.tools.insert(0, good("consultar_pago"))
        catalog_sync(server=server)
        live = Tool.objects.filter(server=server, removed_in__isnull=True)
        assert sorted(live.values_list("prefixed_name", flat=True)) == ["crm__consultar_pago", "crm__crear_pago"]


def test_the_migration_renames_legacy_slugs_without_collisions():
    """M6: slugs stored before the rule get the nearest valid slug, unique in the tenant."""
    migration = importlib.import_module("tools.migrations.0004_unique_prefixed_name")
    renamed = migration.valid_slugs(["crm", "crm__pagos", "crm_pagos", "crm_", "x___y_", "a" * 19 + "_", "crm__"])
    assert renamed == {"crm__pagos": "crm_pagos_2", "crm_": "crm_2", "x___y_": "x_y", "a" * 19 + "_": "a" * 19, "crm__": "crm_3"}


def test_the_migration_repairs_colliding_names_already_stored(committed_world):
    """M6: a tenant that registered `crm__pagos` before the rule: after the migration that
    server is `crm_pagos`, its tool `crm_pagos__x`, and `crm__pagos__x` names one tool."""
    from django.core.management import call_command

    schema = committed_world.tenant.schema_name
    migrate = dict(schema_name=schema, interactive=False, verbosity=0)
    before = ("tools", "0003_toolcall_no_db_constraint")
    call_command("migrate_schemas", *before, **migrate)
    # The rows are written as the schema was then (historical models): later migrations add columns.
    old = MigrationLoader(connection).project_state(before).apps
    OldServer, OldTool = old.get_model("tools", "McpServer"), old.get_model("tools", "Tool")
    try:
        with committed_world.schema():
            crm = OldServer.objects.create(slug="crm", transport="streamable_http", url=URL)
            legacy = OldServer.objects.create(slug="crm__pagos", transport="streamable_http", url=URL)
            trailing = OldServer.objects.create(slug="crm_", transport="streamable_http", url=URL)
            kept, moved = _tool(crm, "pagos__x", model=OldTool), _tool(legacy, "x", model=OldTool)
            _tool(trailing, "consultar_pago", model=OldTool)
    finally:
        call_command("migrate_schemas", "tools", **migrate)
    with committed_world.schema():
        assert sorted(McpServer.objects.values_list("slug", flat=True)) == ["crm", "crm_2", "crm_pagos"]
        assert Tool.objects.get(pk=kept.pk).prefixed_name == "crm__pagos__x"
        assert Tool.objects.get(pk=moved.pk).prefixed_name == "crm_pagos__x"
        assert Tool.objects.filter(prefixed_name="crm_2__consultar_pago").exists()
        with pytest.raises(IntegrityError), transaction.atomic():
            McpServer.objects.create(slug="crm__pagos", transport="streamable_http", url=URL)
