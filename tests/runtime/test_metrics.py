"""What the platform counts (issue 21), through the real code paths: a catalog sync of the example
support server, a turn with a scripted model and a tool call through the gateway, a webhook
delivery to a real receiver; then `/metrics` scraped on the platform's domain and parsed as
Prometheus does. Counts are differences between a scrape before and one after."""

import pytest

from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from tests.runtime.runtime_support import agent, post, register_soporte, run
from tests.runtime.test_webhooks import converse, set_webhook
from tests.support.faults import FaultyPeer
from tests.support.mcp_servers import serve_asgi
from tests.support.metrics import scrape
from tests.support.model_server import Move, ScriptedModel, call, calls, say
from tests.support.webhook_receiver import Receiver
from tests.tools.gateway_support import certified_tool, ok_result

SEARCH = "soporte__buscar_producto"


@pytest.fixture
def metrics_on(settings, eager):
    settings.ASIXTO_METRICS = True
    return settings


def test_a_sync_and_a_turn_with_a_tool_call_are_counted(alpha, metrics_on):
    """Issue 21, M5, R2, R11, G9: one sync (ok); one turn started and finished `done` after two
    model iterations, three model requests (loop twice, then the reply) with the tokens their
    `usage` reported, one read tool call on server `soporte`; nothing left in flight."""
    before = scrape()
    model = ScriptedModel([call(SEARCH, {"consulta": "router"}), say("Tenemos routers."), say("Sí, hay routers.")])
    with serve_asgi(build_app(SupportDesk())) as tool_url, serve_asgi(model.app()) as model_url:
        register_soporte(alpha, tool_url)
        with agent(alpha, f"{model_url}/v1"):
            turn = run(alpha, post(alpha, "¿Tienen routers?"))
    assert turn.status == "done" and turn.reply.text == "Sí, hay routers."
    after = scrape()

    assert after.delta(before, "asixto_syncs_total", tenant="alpha", result="ok") == 1
    assert after.delta(before, "asixto_sync_seconds_count") == 1
    assert after.delta(before, "asixto_turns_started_total", tenant="alpha") == 1
    assert after.delta(before, "asixto_turns_total", tenant="alpha", status="done") == 1
    assert after.delta(before, "asixto_turns_total", tenant="alpha", status="failed") == 0
    assert after.delta(before, "asixto_turn_seconds_count") == 1
    assert after.delta(before, "asixto_turn_queue_seconds_count") == 1
    assert after.delta(before, "asixto_turn_iterations_count") == 1
    assert after.delta(before, "asixto_turn_iterations_sum") == 2
    assert after.value("asixto_turns_in_flight") == 0
    assert after.delta(before, "asixto_model_requests_total", tenant="alpha", outcome="ok") == 3
    assert after.delta(before, "asixto_model_request_seconds_count") == 3
    assert after.delta(before, "asixto_model_tokens_total", tenant="alpha", direction="in") == 3
    assert after.delta(before, "asixto_model_tokens_total", tenant="alpha", direction="out") == 3
    assert after.delta(before, "asixto_tool_calls_total", tenant="alpha", server="soporte", outcome="ok", level="read") == 1
    assert after.delta(before, "asixto_tool_calls_total") == 1
    assert after.delta(before, "asixto_tool_call_seconds_count") == 1
    assert after.delta(before, "asixto_tool_call_retries_total") == 0
    assert after.delta(before, "asixto_truncations_total") == 0


def test_a_failed_model_request_and_its_failed_turn_are_counted(alpha, metrics_on):
    """Issue 21, R11: the model server's 500 is a request with outcome `model_http_error`, and the
    turn is counted as `failed`."""
    before = scrape()
    model = ScriptedModel([Move(status=500, body=b'{"error": {"message": "down"}}')])
    with serve_asgi(model.app()) as model_url, agent(alpha, f"{model_url}/v1"):
        turn = run(alpha, post(alpha, "Hola"))
    assert turn.status == "failed"
    after = scrape()
    assert after.delta(before, "asixto_model_requests_total", tenant="alpha", outcome="model_http_error") == 1
    assert after.delta(before, "asixto_model_requests_total", tenant="alpha", outcome="ok") == 0
    assert after.delta(before, "asixto_turns_total", tenant="alpha", status="failed") == 1
    assert after.delta(before, "asixto_model_tokens_total") == 0


def test_retries_and_truncations_are_counted(alpha, metrics_on):
    """Issue 21, G3, R4: a connection dropped once is retried (one retry); a result over the
    per-result budget is cut (one truncation log), as the turn's logs say."""
    big = "Resultado " + "dato " * 498  # 2,500 characters
    peer = FaultyPeer([ok_result(text=big)])
    peer.drop_first = 1
    tool = "crm__buscar_producto"
    model = ScriptedModel([calls((tool, {"consulta": "a"})), say("ok"), say("Respuesta.")])
    before = scrape()
    with serve_asgi(peer.app()) as tool_url, serve_asgi(model.app()) as model_url:
        certified_tool(alpha, tool_url)
        with agent(alpha, f"{model_url}/v1", result_budget=1000):
            turn = run(alpha, post(alpha, "Busca a"))
    with alpha.schema():
        logs = turn.truncations.count()
    after = scrape()
    assert len(peer.calls) == 2 and logs == 1
    assert after.delta(before, "asixto_tool_call_retries_total", tenant="alpha") == 1
    assert after.delta(before, "asixto_truncations_total", tenant="alpha") == logs
    assert after.delta(before, "asixto_tool_calls_total", tenant="alpha", server="crm", outcome="ok") == 1


def test_webhook_attempts_and_deliveries_are_counted(alpha, metrics_on, django_capture_on_commit_callbacks):
    """Issue 21, R1: a receiver that answers 500 then 200: two attempts, one delivery `delivered`
    (the retried attempt is not a delivery of its own)."""
    receiver = Receiver([500, 200])
    model = ScriptedModel([say("Listo.")])
    before = scrape()
    with serve_asgi(receiver.app()) as hook, serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1"):
        set_webhook(alpha, f"{hook}/hook")
        converse(alpha, "Hola", django_capture_on_commit_callbacks)
    after = scrape()
    assert len(receiver.received) == 2
    assert after.delta(before, "asixto_webhook_attempts_total", tenant="alpha") == 2
    assert after.delta(before, "asixto_webhook_deliveries_total", tenant="alpha", outcome="delivered") == 1
    assert after.delta(before, "asixto_webhook_deliveries_total") == 1
