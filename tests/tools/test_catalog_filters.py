"""The catalog's filters: server, verdict, level and text, in the API and the dashboard (A1, A2)."""

import pytest

from tests.tools.contract_samples import good
from tools.catalog import definition_hash
from tools.models import McpServer, Tool

URL = "https://93.184.216.34/mcp"


def _tool(server, name, level, description):
    definition = {**good(name), "description": description}
    return Tool.objects.create(
        server=server, name=name, prefixed_name=f"{server.slug}__{name}", position=0, definition=definition,
        definition_hash=definition_hash(definition), level=level, certification="certified",
        certified_hash=definition_hash(definition),
    )


@pytest.fixture
def catalog(alpha):
    with alpha.schema():
        crm = McpServer.objects.create(slug="crm", transport="streamable_http", url=URL)
        desk = McpServer.objects.create(slug="desk", transport="streamable_http", url=URL)
        _tool(crm, "consultar_cliente", "read", "Consulta la ficha de un cliente por su documento.")
        _tool(crm, "borrar_cliente", "destructive", "Borra la ficha de un cliente.")
        _tool(desk, "abrir_caso", "write", "Abre un caso de soporte para un pedido.")
    return alpha


@pytest.mark.parametrize("query, expected", [
    ("level=destructive", ["crm__borrar_cliente"]),
    ("q=pedido", ["desk__abrir_caso"]),  # words of the description
    ("q=CLIENTE&level=read", ["crm__consultar_cliente"]),  # the name, any case, with another filter
    ("server=crm&q=caso", []),
])
def test_the_api_filters_the_catalog_by_level_and_text(catalog, query, expected):
    """A1: `level` and `q` narrow the list like `server` and `certification` do."""
    response = catalog.api().get(f"/api/v1/tools?{query}")
    assert response.status_code == 200, response.content
    assert sorted(tool["prefixed_name"] for tool in response.json()["results"]) == expected


def test_a_bad_level_is_a_clear_error(catalog):
    """A4: an unknown level is a 400 that names the field, not an empty list."""
    response = catalog.api().get("/api/v1/tools?level=admin")
    assert response.status_code == 400 and "level" in response.content.decode()


def test_the_dashboard_catalog_filters_by_level_and_text(catalog):
    """A2: the catalog page keeps the filters and shows only what matches."""
    page = catalog.dashboard("sam").get("/catalog/?level=write&q=soporte").content.decode()
    assert "desk__abrir_caso" in page and "crm__" not in page.split("<table", 1)[-1]
    assert 'value="soporte"' in page
