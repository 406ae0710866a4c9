"""The connection layer over streamable HTTP (M2, M4, M5, G3): real SDK servers on loopback,
and peers that fail on purpose (HTTP statuses, hangs, dropped connections, a bad certificate)."""

import socket

import pytest
from django.utils import translation

from examples.soporte.definitions import (
    ABRIR_CASO_SOPORTE,
    BUSCAR_PRODUCTO,
    CONSULTAR_CASO,
)
from examples.soporte.server import build_app
from tests.support.catalog_server import build_catalog_server, make_tools
from tests.support.mcp_apps import (
    dropping_app,
    hanging_app,
    legacy_http_app,
    recording,
    require_bearer,
    scripted_app,
    self_signed_cert,
    status_app,
    streamable_app,
)
from tests.support.mcp_servers import serve_asgi
from tools.mcp import McpError, ServerTarget, list_tools, probe



@pytest.fixture(autouse=True)
def english():
    # Messages follow the active language (A3); these tests read the English ones.
    with translation.override("en"):
        yield

def http(url, **fields):
    return ServerTarget(transport="streamable_http", url=url, **fields)


def test_it_probes_with_a_real_discover_and_lists_from_the_cache_without_negotiating():
    """M4, M5: probe sends server/discover over the wire; with its cached result, list_tools
    sends tools/list and nothing else, and returns each definition exactly as published."""
    log = []
    with serve_asgi(recording(build_app(), log)) as base_url:
        found = probe(http(f"{base_url}/mcp"))
        assert [entry["mcp_method"] for entry in log] == ["server/discover"]
        assert (found.protocol_version, found.legacy) == ("2026-07-28", False)
        assert found.server_info["name"] == "asixto-ejemplo-soporte"

        log.clear()
        tools = list_tools(http(f"{base_url}/mcp", discover=found.discover))
        assert [entry["mcp_method"] for entry in log] == ["tools/list"]
    assert tools == [ABRIR_CASO_SOPORTE, CONSULTAR_CASO, BUSCAR_PRODUCTO]


def test_it_follows_pagination_and_keeps_the_server_order():
    """M5: 250 tools in pages of 100 come back complete and in order (three tools/list calls)."""
    log = []
    catalog = make_tools(250)
    with serve_asgi(recording(streamable_app(build_catalog_server(catalog, page_size=100)), log)) as base_url:
        tools = list_tools(http(f"{base_url}/mcp"))
    assert tools == catalog
    assert [entry["mcp_method"] for entry in log] == ["server/discover"] + ["tools/list"] * 3


def test_it_detects_a_legacy_server_and_lists_through_the_handshake():
    """M4: a stateful server that refuses the 2026-07-28 revision (as SDK 1.x does, 400 /
    -32600) is detected as legacy, and listed through initialize, with or without the flag."""
    catalog = make_tools(5)
    with serve_asgi(legacy_http_app(build_catalog_server(catalog, page_size=2))) as base_url:
        found = probe(http(f"{base_url}/mcp"))
        assert (found.legacy, found.discover, found.protocol_version) == (True, None, "2025-11-25")
        assert list_tools(http(f"{base_url}/mcp", legacy=True)) == catalog
        assert list_tools(http(f"{base_url}/mcp")) == catalog


def test_it_says_when_a_cached_discover_no_longer_fits_the_server():
    """M4: listing with a cached 2026-07-28 discover against a server that now speaks only the
    handshake revision fails clearly and asks for a new probe, instead of guessing."""
    with serve_asgi(build_app()) as base_url:
        cached = probe(http(f"{base_url}/mcp")).discover
    with serve_asgi(legacy_http_app(build_catalog_server(make_tools(2)))) as base_url:
        with pytest.raises(McpError) as caught:
            list_tools(http(f"{base_url}/mcp", discover=cached))
    assert (caught.value.kind, caught.value.http_status) == ("http", 400)
    assert "probe the server again" in caught.value.message


def test_it_sends_the_auth_headers_on_every_request():
    """M1: the server's secret headers go with every request (probe, legacy handshake,
    every page), and a wrong token is an `http` 401 that names no secret."""
    token = "s3cret-bearer-token-42"
    log = []
    app = recording(require_bearer(legacy_http_app(build_catalog_server(make_tools(3), page_size=1)), token), log)
    with serve_asgi(app) as base_url:
        target = http(f"{base_url}/mcp", headers={"Authorization": f"Bearer {token}"}, legacy=True)
        assert len(list_tools(target)) == 3
        assert len(log) >= 5  # initialize, initialized, three pages (and the session's close)
        assert {entry["authorization"] for entry in log} == {f"Bearer {token}"}

        with pytest.raises(McpError) as caught:
            probe(http(f"{base_url}/mcp", headers={"Authorization": "Bearer wrong-token-000"}))
    assert (caught.value.kind, caught.value.http_status) == ("http", 401)
    assert "wrong-token-000" not in caught.value.message


@pytest.mark.parametrize(
    ("status", "headers", "retry_after"),
    [(401, {}, None), (429, {"Retry-After": "30"}, 30.0), (503, {}, None)],
)
@pytest.mark.parametrize("legacy", [False, True])
def test_it_keeps_the_real_http_status(status, headers, retry_after, legacy):
    """M4, G3: 401, 429 (with Retry-After) and 503 are reported as such, not as the SDK's
    generic -32603, and a failing probe is never taken for a legacy server."""
    with serve_asgi(status_app(status, headers)) as base_url:
        with pytest.raises(McpError) as caught:
            if legacy:
                list_tools(http(f"{base_url}/mcp", legacy=True))
            else:
                probe(http(f"{base_url}/mcp"))
    error = caught.value
    assert (error.kind, error.http_status, error.retry_after) == ("http", status, retry_after)
    assert f"HTTP {status}" in error.message
    assert ("initialize" if legacy else "server/discover") in error.message


MODERN_DISCOVER = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
CACHE_HINTS = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}  # required in 2026-07-28


@pytest.mark.parametrize(
    ("pages", "expected"),
    [
        ([{**CACHE_HINTS, "tools": [{"name": "sin_esquema"}]}], "not valid MCP (tools.0.inputSchema"),
        ([{**CACHE_HINTS, "tools": [], "resultType": "input_required"}], "resultType 'input_required'"),
        ([{**CACHE_HINTS, "tools": make_tools(1), "nextCursor": "a"}] * 2, "repeated a tools/list cursor"),
    ],
    ids=["tool-without-input-schema", "input-required", "looping-cursor"],
)
def test_it_rejects_a_listing_that_is_not_valid_mcp(pages, expected):
    """M5, G4: a tool without inputSchema, a result that is not `complete`, and a paginator that
    repeats its cursor are each a clear `protocol` error rather than a partial catalog."""
    with serve_asgi(scripted_app({"tools/list": pages})) as base_url:
        with pytest.raises(McpError) as caught:
            list_tools(http(f"{base_url}/mcp", discover=MODERN_DISCOVER, timeout=2.0))
    assert caught.value.kind == "protocol"
    assert expected in caught.value.message


def test_a_second_reading_is_checked_unless_it_repeats_the_first_exactly():
    """M5, C7, P2 (issue 22): a sync reads the listing twice. Pages answered exactly as the first
    reading's come back as they are (the SDK checked that content already); a second answer that
    differs in anything is checked by the SDK as any answer is, so one that is not valid MCP
    is still a `protocol` error, and one that is valid is returned as sent."""
    tools = make_tools(3)
    valid = [{**CACHE_HINTS, "tools": tools[:2], "nextCursor": "2"}, {**CACHE_HINTS, "tools": tools[2:]}]
    reordered = {**CACHE_HINTS, "tools": [tools[1], tools[0]], "nextCursor": "2"}
    invalid = {**CACHE_HINTS, "tools": [tools[0], {"name": "sin_esquema"}], "nextCursor": "2"}
    script = [*valid, *valid, reordered, valid[1], invalid]
    with serve_asgi(scripted_app({"tools/list": script})) as base_url:
        target = http(f"{base_url}/mcp", discover=MODERN_DISCOVER, timeout=5.0)
        first = list_tools(target)
        again = list_tools(target, previous=first)
        other = list_tools(target, previous=first)
        with pytest.raises(McpError) as caught:
            list_tools(target, previous=first)
    assert first == again == tools and [page.parsed for page in first.pages] == valid
    assert all(repeated is page for repeated, page in zip(again.pages, first.pages, strict=True))
    assert repr(first) == "<Listing of 3 items in 2 pages>"  # asyncio describes tasks by their result
    assert other == [tools[1], tools[0], tools[2]]
    assert caught.value.kind == "protocol" and "not valid MCP (tools.1.inputSchema" in caught.value.message


def test_it_times_out_on_a_server_that_never_answers():
    """G3: a hanging server is a `timeout` that names the limit it missed, never a hang. Only a
    hanging server never answers, so only the per-request timeout can end the probe."""
    with serve_asgi(hanging_app()) as base_url:
        with pytest.raises(McpError) as caught:
            probe(http(f"{base_url}/mcp", timeout=1.0))
    assert (caught.value.kind, caught.value.code) == ("timeout", "timeout")
    assert caught.value.params["timeout"] == 1.0
    assert "did not answer server/discover in time (1 s per request" in str(caught.value)


def test_it_tells_a_dropped_connection_from_one_never_made():
    """G3: a connection cut halfway through the answer is `dropped` (the request may have
    run); a refused connection is `connect` (nothing was sent)."""
    with serve_asgi(dropping_app()) as base_url:
        with pytest.raises(McpError) as dropped:
            probe(http(f"{base_url}/mcp", timeout=2.0))
    assert dropped.value.kind == "dropped"

    with socket.socket() as sock:  # a port that was free a moment ago: nobody listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(McpError) as refused:
        probe(http(f"http://127.0.0.1:{port}/mcp", timeout=2.0))
    assert refused.value.kind == "connect"
    assert "refused" in refused.value.message


def test_it_verifies_tls_certificates(tmp_path):
    """M2: a certificate that no trusted CA signed is refused; there is no switch to skip it."""
    certfile, keyfile = self_signed_cert(tmp_path)
    app = streamable_app(build_catalog_server(make_tools(1)))
    with serve_asgi(app, ssl_certfile=certfile, ssl_keyfile=keyfile) as base_url:
        assert base_url.startswith("https://")
        with pytest.raises(McpError) as caught:
            probe(http(f"{base_url}/mcp", timeout=2.0))
    assert caught.value.kind == "connect"
    assert "TLS certificate could not be verified" in caught.value.message


def test_it_keeps_url_credentials_and_query_out_of_messages():
    """M1: a message names the server by scheme, host, port and path only."""
    with serve_asgi(status_app(503)) as base_url:
        host_port = base_url.removeprefix("http://")
        with pytest.raises(McpError) as caught:
            probe(http(f"http://admin:pa55word-xyz@{host_port}/mcp?api_key=k-777777", timeout=2.0))
    message = caught.value.message
    assert f"http://{host_port}/mcp" in message
    assert "pa55word-xyz" not in message and "k-777777" not in message


def test_it_lists_a_thousand_tools_page_by_page_with_the_cached_discover_only():
    """M4, M5: 1,000 tools in pages of 100 from a loopback server, with the cached discover: every
    read sends ten tools/list requests and nothing else, and returns the whole catalog in order.
    How fast that is belongs to bench/catalog_sync.py (P2), not to a test on a shared machine."""
    log = []
    catalog = make_tools(1000)
    with serve_asgi(recording(streamable_app(build_catalog_server(catalog, page_size=100)), log)) as base_url:
        target = http(f"{base_url}/mcp", discover=probe(http(f"{base_url}/mcp")).discover)
        reads = []
        for _ in range(2):
            log.clear()
            reads.append(list_tools(target))
            assert [entry["mcp_method"] for entry in log] == ["tools/list"] * 10
    assert reads[0] == reads[1] == catalog
