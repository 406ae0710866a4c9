"""Live certification probes (C8, C9) with the admin's sample arguments, through the API and the
services, against real SDK servers on loopback: the verdict of a tool that is clean by its
definition, the probe's calls on record, its verdict kept through syncs while the definition is
unchanged, and its write taken under the server's row lock."""

import copy
import json
import threading

import psycopg
import pytest
from django.db import connection
from django.utils import translation
from django_tenants.utils import tenant_context

from examples.soporte.definitions import CONSULTAR_CASO
from examples.soporte.server import build_app
from tests.support.mcp_servers import serve_asgi
from tests.support.mutable_catalog import MutableCatalog
from tests.tools.contract_samples import good
from tools.models import Finding, Tool, ToolCall
from tools.services import catalog_sync, server_create, tool_probe, tool_set_sample_arguments

SAMPLE = {"documento": "CC1032", "tipo": "falla", "descripcion": "Sin servicio desde ayer"}
CASE = {"radicado": "RAD-77"}
GOOD_CASE = {
    "content": [{"type": "text", "text": "El caso RAD-77 está abierto."}],
    "structuredContent": {
        "radicado": "RAD-77", "estado": "abierto", "tipo": "falla", "prioridad": "normal",
        "abierto_el": "2026-03-02", "sla_horas": 24,
    },
}
LEAKY_CASE = {
    "content": [{"type": "text", "text": 'Traceback (most recent call last):\n  File "app.py", line 3\nKeyError: x\nAuthorization: Bearer abcDEF1234567890xyz'}],
    "structuredContent": {"estado": "desconocido"},
}


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


def probe_calls(world, tool_id):
    calls = world.api().get(f"/api/v1/tool-calls?tool={tool_id}").json()["results"]
    return [call for call in calls if call["source"] == "probe"]


def resync(world, tool_id):
    with world.schema():
        catalog_sync(server=Tool.objects.get(pk=tool_id).server)
        tool = Tool.objects.get(pk=tool_id)
        sources = sorted(Finding.objects.filter(tool=tool).values_list("source", "rule"))
    connection.set_schema_to_public()
    return tool, sources


def test_it_certifies_a_tool_whose_live_answers_keep_the_contract_and_records_the_calls(alpha, synced):
    """C8, C9, G9: the example server answers completely, within budget, twice the same for one
    key; both calls are on record as probe calls, with the sample arguments."""
    with serve_asgi(build_app()) as url:
        ids = synced(url)
        body = probe(alpha, ids["abrir_caso_soporte"], SAMPLE)
    assert body["certification"] == "certified"
    assert [f for f in body["findings"] if f["source"] == "probe"] == []
    calls = probe_calls(alpha, ids["abrir_caso_soporte"])
    assert len(calls) == 2 and {call["outcome"] for call in calls} == {"ok"}
    assert calls[0]["idempotency_key"] == calls[1]["idempotency_key"] and calls[0]["request_ids"] != calls[1]["request_ids"]
    assert calls[0]["arguments"] == SAMPLE and calls[0]["channel"] == "certification" and calls[0]["violations"] == []


@pytest.fixture
def scenarios(alpha):
    """Set alpha's scenarios for one test; the tenant object lives for the whole session."""
    before = alpha.tenant.scenarios

    def set_scenarios(names):
        connection.set_schema_to_public()
        alpha.tenant.scenarios = names
        alpha.tenant.save(update_fields=["scenarios"])

    yield set_scenarios
    alpha.tenant.scenarios = before


def test_it_blocks_a_tool_clean_by_definition_only_for_what_its_probe_found_while_the_definition_stands(alpha, synced, scenarios):
    """C8, M5, C6: a read tool whose definition is clean is certified; its live answer misses
    the outputSchema and carries a stack trace and a bearer token, so the probe blocks it. The
    verdict stands through a re-sync of the same definition, also one that certifies the tool
    again (the tenant's scenarios changed), and goes with a changed definition."""
    catalog = MutableCatalog([CONSULTAR_CASO])
    catalog.results["consultar_caso"] = [LEAKY_CASE]
    with serve_asgi(catalog.app()) as url:
        ids = synced(url)
        tool_id = ids["consultar_caso"]
        with alpha.schema():
            assert Tool.objects.get(pk=tool_id).certification == "certified"
        connection.set_schema_to_public()
        body = probe(alpha, tool_id, CASE)
        rules = {f["rule"] for f in body["findings"] if f["source"] == "probe"}
        assert body["certification"] == "blocked" and rules == {"C8"}
        assert not [f for f in body["findings"] if f["source"] == "definition" and f["severity"] == "blocking"]
        calls = probe_calls(alpha, tool_id)
        assert calls and all(call["source"] == "probe" for call in calls)
        assert calls[-1]["outcome"] == "invalid_output" and calls[-1]["violations"]

        tool, sources = resync(alpha, tool_id)
        assert tool.certification == "blocked" and ("probe", "C8") in sources

        scenarios(["soporte", "pqr", "garantia"])
        judged_before = tool.certified_at
        tool, sources = resync(alpha, tool_id)
        assert tool.certified_at > judged_before  # judged again, with the probe's verdict
        assert tool.certification == "blocked" and ("probe", "C8") in sources

        catalog.tools[0] = {**copy.deepcopy(CONSULTAR_CASO), "title": "Consultar un caso de soporte"}
        tool, sources = resync(alpha, tool_id)
        assert tool.certification == "certified" and not [s for s in sources if s[0] == "probe"]
    name, arguments, meta = catalog.calls[0]
    assert name == "consultar_caso" and arguments == CASE and "com.asixto/idempotencyKey" in meta


def test_it_keeps_a_passing_probe_verdict_through_a_resync(alpha, synced):
    """C8, C9: a clean tool that answers well stays certified with no probe findings, and a
    re-sync of the same definition neither forgets nor re-runs the probe."""
    catalog = MutableCatalog([CONSULTAR_CASO])
    catalog.results["consultar_caso"] = [GOOD_CASE]
    with serve_asgi(catalog.app()) as url:
        ids = synced(url)
        body = probe(alpha, ids["consultar_caso"], CASE)
        assert body["certification"] == "certified" and not [f for f in body["findings"] if f["source"] == "probe"]
        tool, sources = resync(alpha, ids["consultar_caso"])
    assert tool.certification == "certified" and tool.probed_hash == tool.definition_hash
    assert len(catalog.calls) == 2  # the probe's two calls (idempotentHint), none from the sync


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
    recorded = probe_calls(alpha, ids["abrir_caso_soporte"])
    assert any(v["kind"] == "probe:C9" for call in recorded for v in call["violations"])


def test_it_blocks_a_tool_whose_probe_fails_and_says_so_in_the_readers_language(alpha, synced):
    """C8, A3, G9: a probe the server answers with an error is a blocking finding, shown in the
    reader's language whoever ran it, and the failed call is on record."""
    catalog = MutableCatalog([CONSULTAR_CASO])  # no scripted result: the server fails the call
    with serve_asgi(catalog.app()) as url:
        ids = synced(url)
        with alpha.schema():
            tool = Tool.objects.select_related("server").get(pk=ids["consultar_caso"])
            tool_set_sample_arguments(tool=tool, sample_arguments=CASE)
            with translation.override("en"):
                tool_probe(tool=tool)
            finding = Finding.objects.get(tool=tool, source="probe")
            assert Tool.objects.get(pk=tool.pk).certification == "blocked"
            with translation.override("es"):
                assert finding.message.startswith("La prueba en vivo falló")
            with translation.override("en"):
                assert finding.message.startswith("The live probe failed")
            recorded = list(ToolCall.objects.filter(tool=tool, source="probe").values_list("outcome", flat=True))
    assert recorded and recorded[0] != "ok"


def test_it_refuses_a_probe_without_sample_arguments(alpha, synced):
    """C8, A4: probing needs sample arguments; the answer says so and changes nothing."""
    with serve_asgi(build_app()) as url:
        ids = synced(url)
        response = alpha.api().post(f"/api/v1/tools/{ids['consultar_caso']}/probe")
    assert response.status_code == 400 and "sample_arguments" in response.json()["error"]["fields"]


def _dsn():
    settings = connection.settings_dict
    return psycopg.conninfo.make_conninfo(
        dbname=settings["NAME"], user=settings["USER"], password=settings["PASSWORD"] or None,
        host=settings["HOST"] or None, port=settings["PORT"] or None,
    )


def test_it_writes_the_probe_verdict_under_the_servers_row_lock(committed_world, django_db_blocker):
    """C8, M5: the probe's verdict and call records are written in one transaction that takes
    the server row lock a sync takes: while another transaction holds it, the probe has called
    the server but stored nothing; once it is released, everything is there."""
    catalog = MutableCatalog([CONSULTAR_CASO])
    catalog.results["consultar_caso"] = [LEAKY_CASE]
    with django_db_blocker.unblock(), serve_asgi(catalog.app()) as url:
        with committed_world.schema():
            server = server_create(data={"slug": "soporte", "transport": "streamable_http", "url": f"{url}/mcp"})
            catalog_sync(server=server)
            tool = Tool.objects.select_related("server").get(server=server)
            tool_set_sample_arguments(tool=tool, sample_arguments=CASE)
        connection.set_schema_to_public()
        schema = committed_world.tenant.schema_name
        outcome = {}

        def run_probe():
            try:
                with tenant_context(committed_world.tenant):
                    tool_probe(tool=Tool.objects.select_related("server").get(pk=tool.pk))
                outcome["done"] = True
            except Exception as exc:  # reported by the assertions below
                outcome["error"] = exc
            finally:
                connection.close()

        with psycopg.connect(_dsn()) as locker, psycopg.connect(_dsn(), autocommit=True) as watcher:
            locker.execute(f'SET search_path TO "{schema}"')
            locker.execute("SELECT 1 FROM tools_mcpserver WHERE id = %s FOR UPDATE", [server.pk])
            prober = threading.Thread(target=run_probe)
            prober.start()
            waiting = False
            for _ in range(600):  # up to 60 s on a loaded machine
                row = watcher.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND query ILIKE %s", ["%tools_mcpserver%FOR UPDATE%"],
                ).fetchone()
                if row[0]:
                    waiting = True
                    break
                if not prober.is_alive():
                    break
                prober.join(0.1)
            assert waiting and prober.is_alive(), f"the probe did not wait for the server's row lock: {outcome}"
            assert catalog.calls_to("consultar_caso")  # the calls were made before the lock
            stored = locker.execute(
                "SELECT certification, (SELECT count(*) FROM tools_toolcall WHERE source = 'probe') FROM tools_tool WHERE id = %s",
                [tool.pk],
            ).fetchone()
            assert stored == ("certified", 0)
            locker.rollback()
            prober.join(60)
    assert outcome == {"done": True}
    with committed_world.schema():
        assert Tool.objects.get(pk=tool.pk).certification == "blocked"
        assert ToolCall.objects.filter(tool_id=tool.pk, source="probe").count() == len(catalog.calls_to("consultar_caso"))
    connection.set_schema_to_public()
