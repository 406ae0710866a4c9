"""The gateway over what is not a plain modern HTTP server: a legacy (handshake-era) server through
the SDK's legacy path, and an HTTPS server whose certificate does not verify (M2, M4, G3)."""

from examples.soporte.server import build_server
from tests.support.faults import FaultyPeer
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


def test_it_refuses_a_certificate_that_does_not_verify(alpha, tmp_path):
    """M2: TLS is always verified; a self-signed certificate stops the call before any request is
    sent, says why, and is not retried."""
    certfile, keyfile = self_signed_cert(tmp_path)
    peer = FaultyPeer()
    with serve_asgi(peer.app(), ssl_certfile=certfile, ssl_keyfile=keyfile) as url:
        assert url.startswith("https://")
        certified_tool(alpha, url)
        with alpha.schema():
            outcome = call_tool(name="crm__buscar_producto", arguments={"consulta": "x"}, context=context())
    assert outcome.outcome == "protocol_error" and "certificate" in outcome.error and outcome.attempts == 1
    assert peer.requests == []
