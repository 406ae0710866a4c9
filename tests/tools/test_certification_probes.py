"""Live certification probes (C8, C9) with the admin's sample arguments, through the API, against
real SDK servers on loopback."""

import json

import pytest

from examples.soporte.server import build_app
from tests.support.mcp_servers import serve_asgi
from tests.support.mutable_catalog import MutableCatalog
from tests.tools.contract_samples import good
from tools.models import Tool
from tools.services import catalog_sync, server_create

SAMPLE = {"documento": "CC1032", "tipo": "falla", "descripcion": "Sin servicio desde ayer"}


@pytest.fixture
def synced(alpha):
    """Register and sync a server for alpha; yield a function that finds a tool's id by name."""

    def sync(url, slug="soporte"):
        with alpha.schema():
            server = server_create(data={"slug": slug, "transport": "streamable_http", "url": f"{url}/mcp"})
            catalog_sync(server=server)
            return {tool.name: str(tool.pk) for tool in Tool.objects.filter(server=server)}

    return sync


def probe(world, tool_id, sample):
    patched = world.api().patch(f"/api/v1/tools/{tool_id}", json.dumps({"sample_arguments": sample}), content_type="application/json")
    assert patched.status_code == 200, patched.content
    response = world.api().post(f"/api/v1/tools/{tool_id}/probe")
    assert response.status_code == 200, response.content
    return response.json()


def test_it_certifies_a_tool_whose_live_answers_keep_the_contract(alpha, synced):
    """C8, C9: the example server answers completely, within budget, twice the same for one key."""
    with serve_asgi(build_app()) as url:
        ids = synced(url)
        body = probe(alpha, ids["abrir_caso_soporte"], SAMPLE)
    assert body["certification"] == "certified"
    assert [f for f in body["findings"] if f["source"] == "probe"] == []


def test_it_blocks_a_tool_whose_live_answer_breaks_the_contract(alpha, synced):
    """C8: a result that misses its outputSchema and carries a stack trace and a bearer token
    is a blocking probe finding; the verdict stands through a re-sync of the same definition."""
    catalog = MutableCatalog([good("consultar_cliente", annotations={"readOnlyHint": True, "destructiveHint": False, "idempotentHint": False})])
    catalog.results["consultar_cliente"] = [{
        "content": [{"type": "text", "text": 'Traceback (most recent call last):\n  File "app.py", line 3\nKeyError: x\nAuthorization: Bearer abcDEF1234567890xyz'}],
        "structuredContent": {"estado": "desconocido"},
    }]
    with serve_asgi(catalog.app()) as url:
        ids = synced(url)
        body = probe(alpha, ids["consultar_cliente"], SAMPLE)
        rules = {f["rule"] for f in body["findings"] if f["source"] == "probe"}
        assert body["certification"] == "blocked" and "C8" in rules
        with alpha.schema():
            catalog_sync(server=Tool.objects.get(pk=ids["consultar_cliente"]).server)
            assert Tool.objects.get(pk=ids["consultar_cliente"]).certification == "blocked"
    _name, arguments, meta = catalog.calls[0]
    assert arguments == SAMPLE and "com.asixto/idempotencyKey" in meta


def test_it_blocks_an_idempotent_tool_that_answers_differently_to_the_same_key(alpha, synced):
    """C9: idempotentHint true, two calls with one idempotency key, two different cases opened."""
    catalog = MutableCatalog([good("abrir_caso_soporte")])
    catalog.results["abrir_caso_soporte"] = [
        {"content": [{"type": "text", "text": "Caso 1 abierto."}], "structuredContent": {"radicado": "1", "estado": "abierto"}},
        {"content": [{"type": "text", "text": "Caso 2 abierto."}], "structuredContent": {"radicado": "2", "estado": "abierto"}},
    ]
    with serve_asgi(catalog.app()) as url:
        ids = synced(url)
        body = probe(alpha, ids["abrir_caso_soporte"], SAMPLE)
    calls = catalog.calls_to("abrir_caso_soporte")
    assert len(calls) == 2
    assert calls[0][2]["com.asixto/idempotencyKey"] == calls[1][2]["com.asixto/idempotencyKey"]
    assert calls[0][2]["com.asixto/requestId"] != calls[1][2]["com.asixto/requestId"]
    assert "C9" in {f["rule"] for f in body["findings"]} and body["certification"] == "blocked"


def test_it_refuses_a_probe_without_sample_arguments(alpha, synced):
    """C8, A4: probing needs sample arguments; the answer says so and changes nothing."""
    with serve_asgi(build_app()) as url:
        ids = synced(url)
        response = alpha.api().post(f"/api/v1/tools/{ids['consultar_caso']}/probe")
    assert response.status_code == 400 and "sample_arguments" in response.json()["error"]["fields"]
