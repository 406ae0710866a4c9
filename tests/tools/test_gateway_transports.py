"""The gateway over what is not a plain modern HTTP server: a legacy (handshake-era) server through
the SDK's legacy path, an HTTPS server whose certificate does not verify (M2, M4, G3), and the one
classification both HTTP stacks share (the direct POST and the SDK's transports)."""

import pytest

from examples.soporte.server import build_server
from tests.support.faults import MODERN_DISCOVER, FaultyPeer
from tests.support.hostile_peers import EventStreamPeer
from tests.support.mcp_apps import legacy_http_app, self_signed_cert
from tests.support.mcp_servers import serve_asgi
from tests.tools.gateway_support import certified_tool, context
from tools.gateway import call_tool
from tools.models import McpServer
from tools.services import catalog_sync, server_create


def test_it_calls_tools_of_a_legacy_server(alpha):
    """M4: a server that only speaks the handshake-era revision is synced (with its finding) and
    its tools are called through the SDK's legacy path, with the same _meta."""
    with serve_asgi(legacy_http_app(build_server())) as url, alpha.schema():
        server = server_create(data={"slug": "viejo", "transport": "streamable_http", "url": f"{url}/mcp"})
        version = catalog_sync(server=server)
        server = McpServer.objects.get(pk=server.pk)
        outcome = call_tool(name="viejo__buscar_producto", arguments={"consulta": "router"}, context=context())
    assert server.is_legacy and "legacy_protocol" in [f["rule"] for f in version.server_findings]
    assert outcome.ok and outcome.attempts == 1 and "router" in outcome.model_text.lower()


PATHS = {"direct": MODERN_DISCOVER, "sdk": None}  # a cached discover takes the direct POST


@pytest.mark.parametrize("path", PATHS)
def test_it_refuses_a_certificate_that_does_not_verify(alpha, tmp_path, path):
    """M2, G3: TLS is always verified; a self-signed certificate stops the call before any request
    is sent, says why, and is not retried: the same outcome and code on both HTTP stacks."""
    certfile, keyfile = self_signed_cert(tmp_path)
    peer = FaultyPeer()
    with serve_asgi(peer.app(), ssl_certfile=certfile, ssl_keyfile=keyfile) as url:
        assert url.startswith("https://")
        certified_tool(alpha, url, discover=PATHS[path])
        with alpha.schema():
            outcome = call_tool(name="crm__buscar_producto", arguments={"consulta": "x"}, context=context())
    assert (outcome.outcome, outcome.error_code, outcome.attempts) == ("connect_error", "tls_unverified", 1)
    assert "certificate" in outcome.error
    assert peer.requests == []


@pytest.mark.parametrize("path", PATHS)
def test_both_http_stacks_classify_a_refused_connection_and_a_503_alike(alpha, path):
    """G3: a closed port is `connect_refused` (retried, bounded); a 503 keeps its status; the
    stored code and params are the same whichever stack made the call."""
    with serve_asgi(FaultyPeer().app()) as url:
        pass  # the port is closed now
    certified_tool(alpha, url, discover=PATHS[path])
    with alpha.schema():
        refused = call_tool(name="crm__buscar_producto", arguments={"consulta": "x"}, context=context())
    assert (refused.outcome, refused.error_code, refused.attempts) == ("connect_error", "connect_refused", 3)
    assert refused.error_params["url"] == f"{url}/mcp"

    with serve_asgi(FaultyPeer(status=503).app()) as url:
        certified_tool(alpha, url, discover=PATHS[path], slug="caido")
        with alpha.schema():
            failed = call_tool(name="caido__buscar_producto", arguments={"consulta": "x"}, context=context())
    assert (failed.outcome, failed.error_code, failed.http_status) == ("http_error", "http_status", 503)
    assert failed.error_params["status"] == 503 and "HTTP 503" in failed.error


def test_it_reads_an_event_stream_with_line_separators_inside_json(alpha):
    """G3, G5: U+2028 and U+2029 are legal raw inside a JSON string; an event stream carrying them
    is read whole (an SSE line ends only at CR or LF), not split into broken JSON."""
    text = "Router AX\u2028disponible\u2029hoy"
    result = {"content": [{"type": "text", "text": text}],
              "structuredContent": {"productos": [{"nombre": text}], "total": 1}}
    peer = EventStreamPeer(result)
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url)
        with alpha.schema():
            outcome = call_tool(name="crm__buscar_producto", arguments={"consulta": "x"}, context=context())
    assert outcome.ok, (outcome.outcome, outcome.error)
    assert outcome.structured == {"productos": [{"nombre": text}], "total": 1}
