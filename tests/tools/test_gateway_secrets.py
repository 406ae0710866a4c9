"""Secrets echoed back by a server (T7, G9): a server that repeats the auth headers it received in
a 401 JSON-RPC error, a 500 plain-text page, a JSON-RPC error at HTTP 200 or a malformed answer
(which the SDK logs with a quote of it) must not put them in
the call record, the API's answers, the support dashboard or the logs, on the direct POST path
and through the SDK alike. Each header value is redacted, and so is each word of it."""

import json
import logging

import pytest

from tests.support.faults import MODERN_DISCOVER
from tests.support.hostile_peers import EchoPeer
from tests.support.mcp_servers import serve_asgi
from tests.tools.gateway_support import certified_tool
from tools.models import ToolCall

TOKEN = "tok-Zq8mN3pL5vR7sK2w"
API_KEY = "key-Hx4cW9bT6yJ1eD3f"
HEADERS = {"Authorization": f"Bearer {TOKEN}", "X-Api-Key": API_KEY}


@pytest.mark.parametrize("mode", ["401", "500", "rpc", "garbled"])
@pytest.mark.parametrize("path", ["direct", "sdk"])
def test_it_never_stores_shows_or_logs_a_secret_the_server_echoes(alpha, caplog, path, mode):
    """T7, G9: the echo reaches us (the server did get the headers), and the secret is nowhere:
    not in the ToolCall row, the invoke answer, the record over the API, the call page, the logs."""
    caplog.set_level(logging.DEBUG)
    peer = EchoPeer(mode)
    with serve_asgi(peer.app()) as url:
        tool = certified_tool(alpha, url, headers=HEADERS, discover=MODERN_DISCOVER if path == "direct" else None)
        invoked = alpha.api().post(
            f"/api/v1/tools/{tool.pk}/invoke", json.dumps({"arguments": {"consulta": "x"}}),
            content_type="application/json",
        )
    assert invoked.status_code == 200 and peer.calls
    body = invoked.json()
    assert body["outcome"] in ("http_error", "protocol_error")
    record_over_api = alpha.api().get(f"/api/v1/tool-calls/{body['record_id']}")
    page = alpha.dashboard("sam").get(f"/calls/{body['record_id']}/")
    with alpha.schema():
        row = ToolCall.objects.filter(pk=body["record_id"]).values().get()
    seen = {
        "invoke": invoked.content.decode(),
        "record over the API": record_over_api.content.decode(),
        "call page": page.content.decode(),
        "row": json.dumps(row, default=str),
        "logs": caplog.text + "\n".join(record.getMessage() for record in caplog.records),
    }
    for where, text in seen.items():
        assert TOKEN not in text and API_KEY not in text, f"a secret in the {where}"
    if mode in ("401", "rpc"):
        # The server's own words are kept (they help the admin), with the secrets blanked.
        assert "[redacted]" in row["error"] and "refused" in row["error"]
