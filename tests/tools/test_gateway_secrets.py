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


# A tool's own error needs a server the SDK's session can initialise: the direct path's is enough for it.
@pytest.mark.parametrize(("path", "mode"), [(path, mode) for path in ("direct", "sdk") for mode in ("401", "500", "rpc", "garbled")]
                         + [("direct", "business")])
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
    assert body["outcome"] in (("business_error", "invalid_output") if mode == "business" else ("http_error", "protocol_error"))
    row, seen = _everywhere(alpha, invoked, caplog)
    for where, text in seen.items():
        assert TOKEN not in text and API_KEY not in text, f"a secret in the {where}"
    if mode in ("401", "rpc", "business"):
        # The server's own words are kept (they help the admin), with the secrets blanked.
        assert "[redacted]" in row["error"] and "refused" in row["error"]


def test_a_failure_is_blanked_again_whatever_produced_its_params():
    """T7: the second layer. However a failure's params were produced (a transport that forgot to blank
    what it quotes), the outcome's params and its English text carry no secret."""
    from tools.gateway.call import CallOutcome, _failed

    class Shown:
        prefixed_name = "desk__lookup"

    secrets = [f"Bearer {TOKEN}", TOKEN, API_KEY]
    params = {"said": f"refused {TOKEN}", "detail": {"stderr": f"key {API_KEY}"}, "status": 401}
    outcome = _failed(CallOutcome("", ""), ToolCall.Outcome.HTTP_ERROR, "http_status", params, secrets, Shown())
    text = json.dumps(outcome.error_params) + outcome.error + outcome.model_text
    assert TOKEN not in text and API_KEY not in text
    assert outcome.error_params["said"] == "refused [redacted]" and outcome.error_params["status"] == 401


def test_the_secrets_blanked_are_the_servers_current_ones_and_each_tenants_own(alpha, beta):
    """T7, P1: what a call blanks is worked out once per server and configuration, not on every
    call; after an admin changes the server's auth header, an echo of the new secret is blanked
    at once, and two tenants' servers at the same URL each blank their own secrets."""
    from tests.tools.gateway_support import context
    from tools.gateway import call_tool
    from tools.models import McpServer

    old, new, other = "tok-Old4mN3pL5vR7sK2w", "tok-New8cW9bT6yJ1eD3f", "tok-Beta2xQ7rU4nM8hZ5"

    class Peer(EchoPeer):
        """Echoes, and keeps the Authorization header each call arrived with."""

        def __init__(self):
            super().__init__("rpc")
            self.sent = []

        async def answer(self, request, headers, send):
            self.sent.append(headers.get("authorization", ""))
            await super().answer(request, headers, send)

    peer = Peer()

    def call(world, tool):
        with world.schema():
            return call_tool(name=tool.prefixed_name, arguments={"consulta": "x"}, context=context())

    with serve_asgi(peer.app()) as url:
        mine = certified_tool(alpha, url, headers={"Authorization": f"Bearer {old}"}, discover=MODERN_DISCOVER)
        theirs = certified_tool(beta, url, headers={"Authorization": f"Bearer {other}"}, discover=MODERN_DISCOVER)
        before = call(alpha, mine)
        with alpha.schema():
            server = McpServer.objects.get(pk=mine.server_id)
            server.auth_headers = json.dumps({"Authorization": f"Bearer {new}"})
            server.save()
        after = call(alpha, mine)
        beta_outcome = call(beta, theirs)
    assert peer.sent == [f"Bearer {old}", f"Bearer {new}", f"Bearer {other}"]
    for outcome, secret in ((before, old), (after, new), (beta_outcome, other)):
        assert outcome.outcome == "protocol_error" and "[redacted]" in outcome.error, outcome.error
        for text in (outcome.error, json.dumps(outcome.error_params), outcome.model_text):
            assert secret not in text and old not in text and other not in text and new not in text


def test_a_secret_the_first_layer_lets_through_is_blanked_before_it_is_stored_or_shown(alpha, caplog):
    """T7, G9, issue 19 (mutant: the second redaction layer in the gateway removed). A real server
    answers with a JSON-RPC error whose `code` is not a number but the X-Api-Key it received: the
    direct path keeps such a code as it came (cut to 20 characters), without blanking it, so only
    the gateway's second layer keeps the key out of the record's params and text, the API, the
    call page and the logs."""

    class CodeEchoPeer(EchoPeer):
        async def answer(self, request, headers, send):
            error = {"code": headers.get("x-api-key", ""), "message": "not allowed"}
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body",
                        "body": json.dumps({"jsonrpc": "2.0", "id": request["id"], "error": error}).encode()})

    caplog.set_level(logging.DEBUG)
    peer = CodeEchoPeer("rpc")
    with serve_asgi(peer.app()) as url:
        tool = certified_tool(alpha, url, headers=HEADERS, discover=MODERN_DISCOVER)
        invoked = alpha.api().post(
            f"/api/v1/tools/{tool.pk}/invoke", json.dumps({"arguments": {"consulta": "x"}}),
            content_type="application/json",
        )
    assert invoked.status_code == 200 and len(peer.calls) == 1
    body = invoked.json()
    assert body["outcome"] == "protocol_error"
    row, seen = _everywhere(alpha, invoked, caplog)
    # The echo reached the record, blanked: the server's code is there, as the marker.
    assert row["error_code"] == "peer_error" and row["error_params"]["error_code"] == "[redacted]", row["error_params"]
    assert "error [redacted]: not allowed" in row["error"], row["error"]
    for where, text in seen.items():
        assert API_KEY not in text, f"the API key in the {where}"


def _everywhere(world, invoked, caplog):
    """The call's stored row, and each place a person or a log reader can see it, as text."""
    record_id = invoked.json()["record_id"]
    with world.schema():
        row = ToolCall.objects.filter(pk=record_id).values().get()
    return row, {
        "invoke": invoked.content.decode(),
        "record over the API": world.api().get(f"/api/v1/tool-calls/{record_id}").content.decode(),
        "call page": world.dashboard("sam").get(f"/calls/{record_id}/").content.decode(),
        "row": json.dumps(row, default=str),
        "logs": caplog.text + "\n".join(record.getMessage() for record in caplog.records),
    }
