"""The gateway's call path against fault-injection servers on loopback (G1–G9, M6, M7)."""

import pytest
from django.db import connection
from django.utils import translation

from examples.soporte.server import build_app
from tests.support.faults import FaultyPeer
from tests.support.mcp_servers import serve_asgi
from tests.tools.contract_samples import good
from tests.tools.gateway_support import certified_tool, context, ok_result
from tools.gateway import call_tool
from tools.gateway.sanitize import truncation_mark
from tools.models import Tool, ToolCall
from tools.services import catalog_sync, server_create

G1_KEYS = {"idempotencyKey", "conversationId", "requestId", "channel", "companyId", "priceListId", "currency", "timezone"}


@pytest.fixture(autouse=True)
def english():
    # Interface text in English; what the model reads follows the tenant's language (Spanish).
    with translation.override("en"):
        yield


def call(world, name="crm__buscar_producto", arguments=None, **context_changes):
    with world.schema():
        return call_tool(name=name, arguments={"consulta": "router"} if arguments is None else arguments,
                         context=context(**context_changes))


def test_it_sends_the_eight_meta_keys_and_the_bare_name(alpha):
    """G1, M6: `_meta` carries the eight com.asixto/ keys (arguments stay clean); the server sees
    its own tool name, never the prefix; the outcome and the record say ok."""
    peer = FaultyPeer([ok_result()])
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url)
        outcome = call(alpha)
    params = peer.calls[0]["params"]
    assert params["name"] == "buscar_producto" and params["arguments"] == {"consulta": "router"}
    meta = params["_meta"]
    assert {key.split("/", 1)[1] for key in meta if key.startswith("com.asixto/")} == G1_KEYS
    assert meta["com.asixto/idempotencyKey"] == "turn-1-step-1" and meta["com.asixto/companyId"] == "alpha"
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert peer.http_headers[0]["mcp-name"] == "buscar_producto" and peer.http_headers[0]["mcp-method"] == "tools/call"
    assert outcome.ok and outcome.model_text == "Encontré 1 producto." and outcome.attempts == 1
    with alpha.schema():
        record = ToolCall.objects.get(pk=outcome.record_id)
    assert (record.outcome, record.tool_name, record.request_ids) == ("ok", "crm__buscar_producto", [meta["com.asixto/requestId"]])


def test_it_retries_a_dropped_connection_with_the_same_idempotency_key(alpha):
    """G3: the answer drops mid-body; the same call goes again as a new request (new JSON-RPC id,
    new requestId, same idempotency key); the caller gets the second answer once."""
    peer = FaultyPeer([ok_result("primera"), ok_result("segunda")])
    peer.drop_first = 1
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url)
        outcome = call(alpha)
    first, second = peer.calls
    assert first["params"]["_meta"]["com.asixto/idempotencyKey"] == second["params"]["_meta"]["com.asixto/idempotencyKey"]
    assert first["params"]["_meta"]["com.asixto/requestId"] != second["params"]["_meta"]["com.asixto/requestId"]
    assert first["id"] != second["id"]
    assert outcome.ok and outcome.model_text == "segunda" and outcome.attempts == 2
    assert outcome.request_ids == [c["params"]["_meta"]["com.asixto/requestId"] for c in peer.calls]


def test_it_never_retries_a_timeout(alpha):
    """G3: a slow server past the timeout got exactly one request; the outcome is `timeout` and
    the model is told the tool did not answer."""
    peer = FaultyPeer([ok_result()])
    peer.delay = 2.0
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url, timeout=1.0)
        outcome = call(alpha)
    assert len(peer.calls) == 1
    assert outcome.outcome == "timeout" and outcome.attempts == 1
    assert "no respondió a tiempo" in outcome.model_text and "no lo inventes" in outcome.model_text


def test_it_gives_up_after_bounded_refused_connections(alpha):
    """G3: a refused connection is retried a bounded number of times, then reported."""
    with serve_asgi(FaultyPeer().app()) as url:
        pass  # the port is closed now
    certified_tool(alpha, url)
    outcome = call(alpha)
    assert outcome.outcome == "connect_error" and outcome.attempts == 3 and len(set(outcome.request_ids)) == 3


def test_it_cuts_a_100_kb_result_to_the_budget_with_a_mark(alpha):
    """G7, R4: 100 KB of text becomes the per-result budget, ending with the truncation mark."""
    peer = FaultyPeer([ok_result("Producto disponible. " * 5000)])
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url)
        outcome = call(alpha)
    assert outcome.ok and outcome.truncated and len(outcome.model_text) <= 3000
    assert outcome.model_text.endswith(truncation_mark("es")) and "no inventes nada" in outcome.model_text
    with alpha.schema():
        record = ToolCall.objects.get(pk=outcome.record_id)
    assert record.truncated and record.result_chars == 105000 and record.model_chars == len(outcome.model_text)


def test_it_refuses_input_required_after_one_call(alpha):
    """G4: `input_required` is a failed call; the server is called once, never answered."""
    peer = FaultyPeer([{"resultType": "input_required", "inputRequests": {"q": {"method": "elicitation/create"}}}])
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url)
        outcome = call(alpha)
    assert len(peer.calls) == 1 and outcome.outcome == "unsupported_result"
    assert outcome.violations[0]["kind"] == "result_type"


@pytest.mark.parametrize(
    "result, kind",
    [
        ({"content": [{"type": "text", "text": "ok"}], "structuredContent": {"productos": "muchos"}}, "output_schema"),
        ({"isError": True, "content": [{"type": "text", "text": "x"}],
          "structuredContent": {"error": {"error_type": "EXPLODED", "user_message": "Falló"}}}, "error_shape"),
    ],
)
def test_it_keeps_contract_breaking_data_away_from_the_model(alpha, result, kind):
    """G5, G6: invalid structuredContent and an unknown error type are violations; the model gets
    a short failure, not the data."""
    peer = FaultyPeer([result])
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url)
        outcome = call(alpha)
    assert outcome.outcome == "invalid_output" and outcome.violations[0]["kind"] == kind
    assert "muchos" not in outcome.model_text and "EXPLODED" not in outcome.model_text
    assert outcome.structured is None


def test_it_removes_traces_and_tokens_and_records_them(alpha):
    """G7: a stack trace and a bearer token in the text never reach the model; both are recorded
    as violations (without the secret itself)."""
    text = ('Listo.\nTraceback (most recent call last):\n  File "app.py", line 9, in buscar\nKeyError: x\n'
            "Authorization: Bearer abcDEF1234567890xyz")
    peer = FaultyPeer([ok_result(text)])
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url)
        outcome = call(alpha)
    assert "Traceback" not in outcome.model_text and "abcDEF1234567890xyz" not in outcome.model_text
    kinds = {v["kind"] for v in outcome.violations}
    assert {"leak:trace", "leak:token"} <= kinds
    with alpha.schema():
        record = ToolCall.objects.get(pk=outcome.record_id)
    assert "abcDEF1234567890xyz" not in str(record.violations) and record.violations


def test_it_passes_business_errors_and_empty_searches_to_the_model(alpha):
    """G6: a business error is not a transport error: the model reads its type and message; an
    empty search is a success with total 0 (the example server)."""
    with serve_asgi(build_app()) as url, alpha.schema():
        catalog_sync(server=server_create(data={"slug": "soporte", "transport": "streamable_http", "url": f"{url}/mcp"}))
        empty = call_tool(name="soporte__buscar_producto", arguments={"consulta": "zzz-nada"}, context=context())
        missing = call_tool(name="soporte__consultar_caso", arguments={"radicado": "SOP-999"}, context=context())
    assert empty.ok and empty.structured == {"productos": [], "total": 0}
    assert missing.outcome == "business_error" and missing.error_type == "NOT_FOUND"
    assert missing.model_text.startswith("NOT_FOUND: ") and "radicado" in missing.model_text


def test_it_never_calls_the_server_with_arguments_that_break_the_schema(alpha):
    """G2: the model gets a correctable error and the server is not called."""
    peer = FaultyPeer([ok_result()])
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url)
        outcome = call(alpha, arguments={"consulta": 42, "extra": True})
    assert peer.calls == [] and outcome.outcome == "invalid_arguments"
    assert "Corrígelos" in outcome.model_text and "consulta" in outcome.model_text and "extra" in outcome.model_text


def test_it_refuses_a_destructive_tool_where_the_policy_allows_only_reading(alpha):
    """M7: a destructive tool on a channel whose policy allows only `read` is refused before
    anything is sent; the same tool on another channel goes through."""
    delete = good("eliminar_cita", annotations={"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True})
    delete["outputSchema"] = {"type": "object"}
    delete["inputSchema"] = {"type": "object", "additionalProperties": False, "properties": {}}
    connection.set_schema_to_public()
    before = alpha.tenant.exposure_policy
    alpha.tenant.exposure_policy = {"voice": ["read"], "chat": ["read", "write", "destructive"]}
    alpha.tenant.save(update_fields=["exposure_policy"])
    peer = FaultyPeer([ok_result("Cita eliminada.", {})])
    try:
        with serve_asgi(peer.app()) as url:
            certified_tool(alpha, url, delete)
            refused = call(alpha, "crm__eliminar_cita", {}, channel="voice")
            allowed = call(alpha, "crm__eliminar_cita", {}, channel="chat")
    finally:
        alpha.tenant.exposure_policy = before  # the session's tenant object outlives the rollback
    assert refused.outcome == "refused" and len(peer.calls) == 1 and allowed.ok


def test_it_refuses_tools_that_are_not_certified_or_disabled(alpha):
    """C, M5: a blocked, pending or disabled tool is never called."""
    peer = FaultyPeer([ok_result()])
    with serve_asgi(peer.app()) as url:
        tool = certified_tool(alpha, url)
        for change in ({"certification": "blocked"}, {"certification": "certified", "definition_hash": "changed"}, {"enabled": False}):
            with alpha.schema():
                Tool.objects.filter(pk=tool.pk).update(**{"certification": "certified", "enabled": True, **change})
            assert call(alpha).outcome == "unavailable"
    assert peer.calls == []


def test_it_keeps_the_servers_http_status_and_retry_after(alpha):
    """G3 (results): a 429 with Retry-After and a 503 keep their status instead of a generic error."""
    for status, headers in ((429, {"Retry-After": "7"}), (503, {}), (401, {})):
        peer = FaultyPeer(status=status, headers=headers)
        with serve_asgi(peer.app()) as url:
            certified_tool(alpha, url, slug=f"s{status}")
            outcome = call(alpha, name=f"s{status}__buscar_producto")
        assert (outcome.outcome, outcome.http_status, len(peer.calls)) == ("http_error", status, 1)
        if status == 429:
            assert outcome.retry_after == 7


def test_it_drops_media_and_removes_urls_for_voice(alpha):
    """G8: image content is dropped; on the voice channel URLs are removed from the text."""
    result = ok_result("Ver https://tienda.example.com/router?id=1 para detalles.")
    result["content"].append({"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"})
    peer = FaultyPeer([result])
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url)
        voice = call(alpha, channel="voice")
        chat = call(alpha, channel="chat")
    assert "https://" not in voice.model_text and "para detalles" in voice.model_text
    assert "https://tienda.example.com" in chat.model_text and "aGVsbG8=" not in chat.model_text


DEEP = ["a"]
for _level in range(40):
    DEEP = [DEEP]


@pytest.mark.parametrize("arguments", [
    {"consulta": "router\ud800"},  # a lone surrogate: `"\ud800"` is valid JSON a model can write
    {"consulta": "router\x00"},  # NUL: no record or log takes it as text
    {"consulta": "router", "x": DEEP},
])
def test_arguments_no_server_can_take_are_a_correctable_error_not_an_exception(alpha, arguments):
    """G2, A4, G9: arguments from a model with a lone surrogate, a NUL or absurd nesting never
    raise: the server is not called, the model gets a correctable error, and the call is recorded."""
    from tools.gateway import flush_records

    peer = FaultyPeer([ok_result()])
    with serve_asgi(peer.app()) as url:
        certified_tool(alpha, url)
        outcome = call(alpha, arguments=arguments)
        flush_records()
    assert peer.calls == [] and outcome.outcome == "invalid_arguments"
    assert "crm__buscar_producto" in outcome.model_text
    with alpha.schema():
        assert ToolCall.objects.get(pk=outcome.record_id).outcome == "invalid_arguments"
