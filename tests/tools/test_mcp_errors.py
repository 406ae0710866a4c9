"""Connection errors as stable codes and plain parameters (A3, G9): stored once, rendered in the
reader's language when read; English for logs; safe to pickle (Celery) and to store as JSON."""

import json
import pickle

import httpx
import httpx2

from django.utils import translation

from tests.support.faults import FaultyPeer
from tests.support.mcp_servers import serve_asgi
from tests.tools.gateway_support import certified_tool, context
from tools.gateway import call_tool
from tools.mcp import McpError
from tools.mcp.errors import MESSAGES, render_error
from tools.mcp.failures import FINAL_CODES, transport_failure
from tools.outbound import OutboundRefused
from tools.models import ToolCall


def test_an_error_carries_a_code_and_plain_params_and_survives_pickling():
    """A3: `code` and `params` are what a reader's language is rendered from; `str()` is English
    for logs; Celery's pickling keeps every field."""
    error = McpError("http", "http_status", {"url": "https://crm.example.com/mcp", "method": "tools/list",
                                              "status": 429, "retry_after": 30}, http_status=429, retry_after=30.0)
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.kind, copy.code, copy.params, copy.http_status, copy.retry_after) == (
        "http", "http_status", error.params, 429, 30.0)
    assert json.loads(json.dumps(copy.params)) == copy.params
    with translation.override("es"):
        assert str(copy) == "The MCP server at https://crm.example.com/mcp answered HTTP 429 to tools/list. It asks to retry after 30 s."
        assert copy.message == render_error("http_status", copy.params)


def test_both_stacks_classify_a_connect_time_refusal_as_final():
    """M2, G3: the outbound rules re-checked by a client's network backend refuse a connection
    inside httpx's (or httpx2's) ConnectError; it is `outbound_refused`, never retried."""
    for stack in (httpx, httpx2):
        try:
            try:
                raise OutboundRefused("127.0.0.1 is a loopback address; the platform does not connect there.")
            except OutboundRefused as refusal:
                raise stack.ConnectError("refused") from refusal
        except stack.ConnectError as error:
            failure = transport_failure([error], server={"url": "https://x.example/mcp"}, method="tools/call x", limits={})
        assert (failure.kind, failure.code) == ("connect", "outbound_refused") and failure.code in FINAL_CODES
        assert "loopback" in str(failure)


def test_every_code_renders_without_missing_values():
    """A3: each code's sentence renders from the params its raisers give (no `?` placeholder)."""
    params = {"url": "https://x.example/mcp", "method": "tools/call x", "detail": "d", "timeout": 2.0, "total": 2.0,
              "error_type": "ReadError", "status": 500, "limit": 1048576, "encoding": "gzip", "error_code": -32001,
              "said": "s", "place": "p", "reason": "r", "result_type": "'x'", "pages": 1000, "versions": ["a"],
              "signal": "SIGKILL"}
    for code in MESSAGES:
        text = render_error(code, params)
        assert "?" not in text and "%(" not in text, code
    with translation.override("en"):
        assert render_error("no_such_code", {}) == "The MCP server failed (no_such_code)."


def test_a_call_record_keeps_the_code_and_the_dashboard_renders_it_for_the_reader(alpha):
    """A3, G9: the record stores the code and params; `error` keeps the English text for logs; the
    call page renders the code in the reader's language rather than showing the stored text."""
    with serve_asgi(FaultyPeer().app()) as url:
        pass  # nothing listens there any more
    certified_tool(alpha, url)
    with alpha.schema():
        outcome = call_tool(name="crm__buscar_producto", arguments={"consulta": "x"}, context=context())
        ToolCall.objects.filter(pk=outcome.record_id).update(error="stored text")
        record = ToolCall.objects.get(pk=outcome.record_id)
    assert (record.error_code, record.error_params["url"]) == ("connect_refused", f"{url}/mcp")
    assert outcome.error.startswith(f"The MCP server at {url}/mcp could not be reached")
    for language in ("en", "es"):
        page = alpha.dashboard("sam").get(f"/calls/{record.pk}/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
        with translation.override(language):
            expected = render_error(record.error_code, record.error_params)
        assert "stored text" not in page and expected in page
