"""An unchanged catalog is known by its bytes (P2, M5, C7, issue 22): a sync whose two reads of
`tools/list` answer the very bytes the stored catalog was read from, in the context it was judged
in, parses nothing, judges nothing and writes nothing but the sync time (counted `unchanged`);
a page that differs in one byte goes the SDK's whole way, and is certified and stored, or fails
as any answer that is not valid MCP does. Real SDK servers, or an ASGI peer that serves exact
bytes, on loopback; the sync through the services."""

import json
import sys
from pathlib import Path

import pytest
from django.db import connection

from tenants.models import ApprovedCommand
from tests.support.asgi import lifespan, request_body
from tests.support.faults import MODERN_DISCOVER
from tests.support.mcp_apps import scripted_app
from tests.support.mcp_servers import serve_asgi
from tests.support.metrics import scrape
from tests.support.mutable_catalog import MutableCatalog
from tests.tools.contract_samples import good
from tools.listing_seal import standing_pages
from tools.mcp import McpError, ServerTarget, list_tools
from tools.models import Finding, McpServer, Tool
from tools.services import catalog_sync, server_create, server_target

CACHE_HINTS = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}  # required in 2026-07-28
CATALOG_SCRIPT = str(Path(__file__).resolve().parents[1] / "support" / "catalog_server.py")
NAMES = ["abrir_caso_soporte", "consultar_caso", "cerrar_caso", "mover_etapa", "crear_cita", "cancelar_cita"]


@pytest.fixture
def metrics_on(settings, alpha):
    settings.ASIXTO_METRICS = True
    connection.set_schema_to_public()
    before = alpha.tenant.scenarios
    alpha.tenant.scenarios = ["soporte", "pqr", "garantia"]
    alpha.tenant.save(update_fields=["scenarios"])
    yield settings
    alpha.tenant.scenarios = before


class RawCatalog:
    """A peer that answers `tools/list` page n with exactly the bytes `pages[n]` (the JSON text of
    the result; the cursor is the page's index), and `server/discover` as a 2026-07-28 server."""

    def __init__(self, tools: list[dict], page_size: int):
        chunks = [tools[start:start + page_size] for start in range(0, len(tools), page_size)]
        self.pages = [
            json.dumps({**CACHE_HINTS, "tools": chunk, **({"nextCursor": str(n + 1)} if n + 1 < len(chunks) else {})},
                       ensure_ascii=False).encode()
            for n, chunk in enumerate(chunks)
        ]

    def replace_once(self, page: int, old: bytes, new: bytes, *, after: bytes = b"") -> None:
        """Replace the first `old` of page `page` that follows `after`."""
        text = self.pages[page]
        start = text.index(after)
        at = text.index(old, start)
        self.pages[page] = text[:at] + new + text[at + len(old):]

    def app(self):
        async def app(scope, receive, send):
            if scope["type"] == "lifespan":
                return await lifespan(receive, send)
            request = json.loads(await request_body(receive))
            if "id" not in request:
                await send({"type": "http.response.start", "status": 202, "headers": []})
                await send({"type": "http.response.body", "body": b""})
                return
            if request["method"] == "tools/list":
                result = self.pages[int((request.get("params") or {}).get("cursor") or 0)]
            else:
                result = json.dumps(MODERN_DISCOVER).encode()
            body = b'{"jsonrpc":"2.0","id":' + json.dumps(request["id"]).encode() + b',"result":' + result + b"}"
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body})

        return app


def rows(server) -> dict:
    """Each tool row's physical address (an UPDATE gives it a new one) and when it was judged."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, ctid::text, certified_at FROM tools_tool WHERE server_id = %s", [server.pk])
        return {name: (address, judged) for name, address, judged in cursor.fetchall()}


def counted(alpha):
    """A scrape of /metrics from inside the tenant's schema (the request leaves the public one)."""
    found = scrape()
    connection.set_tenant(alpha.tenant)
    return found


def syncs(alpha, before, result: str) -> float:
    return counted(alpha).delta(before, "asixto_syncs_total", tenant="alpha", result=result)


def test_an_unchanged_listing_is_known_by_its_bytes_and_not_parsed(alpha, metrics_on):
    """P2, M5: the second sync of an unchanged SDK server is `unchanged`: the same version, the
    sync time recorded, no tool row rewritten; a listing given the stored seal comes back unread,
    none of its pages parsed."""
    catalog = MutableCatalog([good(name) for name in NAMES])
    with serve_asgi(catalog.app()) as url, alpha.schema():
        server = server_create(data={"slug": "soporte", "transport": "streamable_http", "url": f"{url}/mcp"})
        first = catalog_sync(server=server)
        synced_at, before_rows, before = server.synced_at, rows(server), counted(alpha)
        again = catalog_sync(server=server)
        unchanged, ok = syncs(alpha, before, "unchanged"), syncs(alpha, before, "ok")
        after_rows = rows(server)
        stored = McpServer.objects.get(pk=server.pk)
        listing = list_tools(server_target(server), known=standing_pages(server))
        versions = list(server.versions.values_list("number", flat=True))
    assert again.pk == first.pk and versions == [1]
    assert (unchanged, ok) == (1, 0)
    assert stored.synced_at > synced_at and stored.sync_status == "ok"
    assert after_rows == before_rows and len(after_rows) == len(NAMES)
    assert listing.unread and listing.count == len(NAMES) and all(page.parsed is None for page in listing.pages)
    assert listing.read() == [good(name) for name in NAMES]  # read when asked, as the SDK checked it


@pytest.mark.parametrize("page_size", [6, 2], ids=["one page", "three pages"])
def test_a_page_changed_by_one_byte_is_parsed_certified_and_stored(alpha, metrics_on, page_size):
    """P2, M5, C2: one byte of one description changes (in the middle page of three, the others
    answered as before): the sync is `ok`, not `unchanged`; that tool alone is judged again and
    stored with its new words, in the server's order; the listing is sealed again, so the sync
    after it is `unchanged`."""
    catalog = RawCatalog([good(name) for name in NAMES], page_size)
    with serve_asgi(catalog.app()) as url, alpha.schema():
        server = server_create(data={"slug": "soporte", "transport": "streamable_http", "url": f"{url}/mcp"})
        catalog_sync(server=server)
        before_rows, before = rows(server), counted(alpha)
        catalog.replace_once(len(catalog.pages) // 2, b"problema.", b"problema!", after=b'"name": "cerrar_caso"')
        version = catalog_sync(server=server)
        changed_result = (syncs(alpha, before, "unchanged"), syncs(alpha, before, "ok"))
        after_rows = rows(server)
        stored = list(Tool.objects.filter(server=server, removed_in__isnull=True).order_by("position").values_list(
            "name", "server_definition", "certification"))
        before = counted(alpha)
        catalog_sync(server=server)
        next_result = (syncs(alpha, before, "unchanged"), syncs(alpha, before, "ok"))
    assert changed_result == (0, 1) and next_result == (1, 0)
    assert version.number == 2 and version.diff["changed"] == [{"name": "cerrar_caso", "fields": ["description"]}]
    assert [name for name, _definition, _verdict in stored] == NAMES
    assert {verdict for _name, _definition, verdict in stored} == {"certified"}
    descriptions = {name: definition["description"] for name, definition, _verdict in stored}
    assert "describió el problema! " in descriptions["cerrar_caso"]
    assert all("describió el problema. " in descriptions[name] for name in NAMES if name != "cerrar_caso")
    assert after_rows["cerrar_caso"] != before_rows["cerrar_caso"]
    assert {name: after_rows[name] for name in NAMES if name != "cerrar_caso"} == {
        name: before_rows[name] for name in NAMES if name != "cerrar_caso"}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [(b'"inputSchema"', b'"inputSchemb"', ("invalid_result", "place", "tools.0.inputSchema")),
     (b'"tools": [', b'"tools": {', ("peer_error", "error_code", -32700))],
    ids=["not valid MCP", "not JSON"],
)
def test_a_malformed_page_after_a_sealed_one_fails_clearly(alpha, metrics_on, old, new, expected):
    """P2, M5, G4: a page that differs from the sealed one by one byte and is not valid MCP (a
    tool without inputSchema) or not JSON at all (the SDK's parse error) fails the sync as a
    `protocol` error, whatever was sealed; the last catalog stays, and so does its seal (the good bytes again: `unchanged`)."""
    catalog = RawCatalog([good(name) for name in NAMES], 6)
    good_page = catalog.pages[0]
    with serve_asgi(catalog.app()) as url, alpha.schema():
        server = server_create(data={"slug": "soporte", "transport": "streamable_http", "url": f"{url}/mcp"})
        first = catalog_sync(server=server)
        seal, before_rows = server.listing_seal, rows(server)
        catalog.replace_once(0, old, new)
        with pytest.raises(McpError) as caught:
            catalog_sync(server=server)
        failed = McpServer.objects.get(pk=server.pk)
        after_rows = rows(server)
        catalog.pages[0] = good_page
        before = counted(alpha)
        again = catalog_sync(server=server)
        unchanged = syncs(alpha, before, "unchanged")
    code, param, value = expected
    assert (caught.value.kind, caught.value.code, caught.value.params.get(param)) == ("protocol", code, value)
    assert failed.sync_status == "error" and failed.sync_error_code and failed.listing_seal == seal
    assert after_rows == before_rows
    assert again.pk == first.pk and unchanged == 1


def test_a_server_whose_two_reads_differ_is_never_sealed(alpha, metrics_on):
    """C7, P2: a server that answers each read in another order keeps its C7 finding, and no
    seal: every sync of it goes the whole way (`ok`)."""
    catalog = MutableCatalog([good(name) for name in NAMES])
    catalog.reorder_on_each_list = True
    with serve_asgi(catalog.app()) as url, alpha.schema():
        server = server_create(data={"slug": "soporte", "transport": "streamable_http", "url": f"{url}/mcp"})
        catalog_sync(server=server)
        before = counted(alpha)
        catalog_sync(server=server)
        results = (syncs(alpha, before, "unchanged"), syncs(alpha, before, "ok"))
        rules = set(Finding.objects.filter(server=server, tool__isnull=True).values_list("rule", flat=True))
    assert server.listing_seal == {} and results == (0, 1) and "C7" in rules


def test_an_answer_shaped_like_the_stub_is_checked_as_any_answer():
    """P2, G4: a recognised page reaches the SDK as a stub holding a nonce of the listing's own,
    never sent; a server that answers with something of that shape is checked as any answer
    (not valid MCP) and never taken for a page already checked."""
    forged = {**CACHE_HINTS, "com.asixto/recognised": "0" * 32}
    with serve_asgi(scripted_app({"tools/list": [{**CACHE_HINTS, "tools": [good()]}, forged]})) as base_url:
        target = ServerTarget(transport="streamable_http", url=f"{base_url}/mcp", discover=MODERN_DISCOVER, timeout=5.0)
        first = list_tools(target)
        with pytest.raises(McpError) as caught:
            list_tools(target, previous=first)
    assert (caught.value.kind, caught.value.code, caught.value.params["place"]) == ("protocol", "invalid_result", "tools")


@pytest.mark.parametrize("change", ["scenarios", "row"])
def test_the_same_bytes_in_another_context_go_the_whole_way(alpha, metrics_on, change):
    """P2, M5, C6: the seal holds only in the context it was made in: after the tenant's
    scenarios change, or a tool row's certification basis is changed outside a sync, the same
    bytes are read and judged again (`ok`), and the sync after that is `unchanged` again."""
    catalog = MutableCatalog([good(name) for name in NAMES])
    with serve_asgi(catalog.app()) as url, alpha.schema():
        server = server_create(data={"slug": "soporte", "transport": "streamable_http", "url": f"{url}/mcp"})
        catalog_sync(server=server)
        judged = rows(server)["crear_cita"][1]
        if change == "scenarios":
            alpha.tenant.scenarios = ["soporte", "pqr"]
        else:
            Tool.objects.filter(server=server, name="crear_cita").update(certification_basis="")
        before = counted(alpha)
        catalog_sync(server=server)
        whole_way = (syncs(alpha, before, "unchanged"), syncs(alpha, before, "ok"))
        judged_again = rows(server)["crear_cita"][1]
        before = counted(alpha)
        catalog_sync(server=server)
        then = (syncs(alpha, before, "unchanged"), syncs(alpha, before, "ok"))
    assert whole_way == (0, 1) and then == (1, 0)
    assert judged_again > judged


def test_a_stdio_listing_is_known_by_its_lines(alpha, metrics_on, tmp_path):
    """P2, M3, M5: over stdio an answer is one line, recognised the same way: a catalog of three
    pages listed again as it was is `unchanged`; after one tool's description changes (the child
    reads it from a file as it starts), the sync is `ok`, stores the new words and seals the
    listing again."""
    suffix = tmp_path / "suffix"
    suffix.write_text("")
    connection.set_schema_to_public()
    ApprovedCommand.objects.create(
        slug="catalogo", executable=sys.executable,
        base_args=[CATALOG_SCRIPT, "--tools", "5", "--page-size", "2", "--suffix-file", str(suffix)],
    )
    results = []
    with alpha.schema():
        server = server_create(data={"slug": "local", "transport": "stdio", "command": "catalogo", "timeout_seconds": 30.0})
        for text in ("", "", " Solo para consultas."):
            suffix.write_text(text)
            before = counted(alpha)
            version = catalog_sync(server=server)
            results.append((version.number, syncs(alpha, before, "unchanged"), syncs(alpha, before, "ok")))
        description = Tool.objects.get(server=server, name="consultar_item_0002", removed_in__isnull=True).definition["description"]
        sealed = len(McpServer.objects.get(pk=server.pk).listing_seal["pages"])
    assert results == [(1, 0, 1), (1, 1, 0), (2, 0, 1)]
    assert description.endswith("No la uses para crear ítems. Solo para consultas.") and sealed == 3
