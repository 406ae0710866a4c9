"""The connection layer over the deprecated HTTP+SSE transport (M1, M4, M5, G3): an SDK
server served with the SDK's SseServerTransport (`GET /sse`, `POST /messages/`)."""

import pytest
from django.utils import translation

from tests.support.catalog_server import build_catalog_server, make_tools
from tests.support.mcp_apps import recording, require_bearer, sse_app, status_app
from tests.support.mcp_servers import serve_asgi
from tools.mcp import McpError, ServerTarget, list_tools, probe



@pytest.fixture(autouse=True)
def english():
    # Messages follow the active language (A3); these tests read the English ones.
    with translation.override("en"):
        yield

def sse(url, **fields):
    return ServerTarget(transport="sse", url=url, **fields)


def test_it_probes_and_lists_every_page_over_sse():
    """M4, M5: over SSE the probe really sends server/discover, and tools/list follows the
    cursors; the auth header rides on the stream request and on every posted message."""
    token = "sse-bearer-token-77"
    log = []
    catalog = make_tools(5)
    app = recording(require_bearer(sse_app(build_catalog_server(catalog, page_size=2)), token), log)
    with serve_asgi(app) as base_url:
        target = sse(f"{base_url}/sse", headers={"Authorization": f"Bearer {token}"})
        found = probe(target)
        assert (found.protocol_version, found.legacy) == ("2026-07-28", False)
        log.clear()
        tools = list_tools(
            sse(f"{base_url}/sse", headers={"Authorization": f"Bearer {token}"}, discover=found.discover)
        )
    assert tools == catalog
    assert [entry["method"] for entry in log] == ["GET"] + ["POST"] * 3  # no negotiation: 3 pages
    assert {entry["authorization"] for entry in log} == {f"Bearer {token}"}


@pytest.mark.parametrize(
    ("status", "headers", "retry_after"),
    [(401, {}, None), (429, {"Retry-After": "5"}, 5.0), (503, {}, None), (503, {"Retry-After": "²"}, None)],
)
def test_it_keeps_the_real_http_status_of_the_event_stream(status, headers, retry_after):
    """G3: a refused SSE stream keeps its status (and Retry-After) instead of a bare error. Issue 19
    (low): `Retry-After: ²` (a digit to str.isdigit, not a number) raised a ValueError here, which
    crashed the server's sync and left it `running`; it now reads as no Retry-After."""
    with serve_asgi(status_app(status, headers)) as base_url:
        with pytest.raises(McpError) as caught:
            list_tools(sse(f"{base_url}/sse", timeout=2.0))
    assert (caught.value.kind, caught.value.http_status, caught.value.retry_after) == ("http", status, retry_after)


def test_it_reports_a_refused_post_as_http_rather_than_a_timeout():
    """G3: the SDK's SSE client only logs a failed POST (the request would just time out);
    the real status of the refused message is reported instead."""
    token = "sse-post-token-88"

    def post_only_guard(app):
        # The stream is open to anyone; the messages need the token (a split some proxies make).
        guarded = require_bearer(app, token)

        async def route(scope, receive, send):
            target = guarded if scope["type"] == "http" and scope["method"] == "POST" else app
            await target(scope, receive, send)

        return route

    with serve_asgi(post_only_guard(sse_app(build_catalog_server(make_tools(1))))) as base_url:
        with pytest.raises(McpError) as caught:
            probe(sse(f"{base_url}/sse", timeout=1.0))
    assert (caught.value.kind, caught.value.http_status) == ("http", 401)
    assert "server/discover" in caught.value.message
