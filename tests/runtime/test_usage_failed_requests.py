"""A model request that fails is a model request all the same (issue 20): an error or a timeout
from the model server counts in usage (`GET /api/v1/usage`, the overview) as a model request,
with no tokens, apart from answers that reported none; a request that never left (no model
configured) counts nothing."""

from datetime import timedelta

import pytest
from django.utils import timezone

from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from runtime.models import Turn, TurnStep
from tests.runtime.runtime_support import agent, post, register_soporte, run, tenant_settings
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, say, slow, status



def usage_totals(world):
    now, day = timezone.now(), timedelta(days=1)
    period = f"since={(now - day):%Y-%m-%dT%H:%M:%SZ}&until={(now + day):%Y-%m-%dT%H:%M:%SZ}"
    response = world.api().get(f"/api/v1/usage?{period}")
    assert response.status_code == 200, response.content
    return response.json()["totals"]


def steps_of(world, turn):
    with world.schema():
        return [(step.kind, step.state, step.tokens_in, step.tokens_out) for step in TurnStep.objects.filter(turn=turn)]


@pytest.mark.parametrize("failure, code", [(status(500), "model_http_error"), (slow(say("tarde"), 30), "model_timeout")])
def test_a_failed_model_request_counts_in_usage(alpha, settings, failure, code):
    """Issue 20: the model server answers 500, or nothing in time: the turn fails, and usage
    counts one model request, failed, with no tokens (not an answer without token counts)."""
    settings.ASIXTO_MODEL_TIMEOUT = 0.5
    settings.ASIXTO_MODEL_RETRIES = 0  # one request on the wire (a request sent again: the test below)
    model = ScriptedModel([failure])
    with serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "¿Tienen routers?"))
    assert turn.status == Turn.Status.FAILED and turn.error_code == code
    assert len(model.requests) == 1
    assert steps_of(alpha, turn) == [("model", "failed", None, None)]
    assert usage_totals(alpha) == {"turns": 1, "model_requests": 1, "failed_requests": 1, "requests_without_usage": 0,
                                   "tokens_in": None, "tokens_out": None, "cost": None}


def test_a_request_answered_when_sent_again_is_one_answered_request(alpha):
    """Issue 20, R11: a 503 and then the answer (the client sends it again): usage counts one
    model request, answered, with its tokens, and no failed one."""
    model = ScriptedModel([status(503, retry_after="0"), say("Hola", usage={"prompt_tokens": 40, "completion_tokens": 3})])
    with serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "Hola"))
    assert (turn.status, turn.reply.text, len(model.requests)) == (Turn.Status.DONE, "Hola", 2)
    assert steps_of(alpha, turn) == [("model", "done", 40, 3)]
    assert usage_totals(alpha) == {"turns": 1, "model_requests": 1, "failed_requests": 0, "requests_without_usage": 0,
                                   "tokens_in": 40, "tokens_out": 3, "cost": None}


def test_a_turn_counts_its_answered_and_its_failed_requests(alpha):
    """Issue 20: a tool call answered with its tokens, then a model request that fails: two model
    requests, one failed; the tokens are the answered one's. The overview shows the same."""
    model = ScriptedModel([call("soporte__buscar_producto", {"consulta": "router"}, usage={"prompt_tokens": 812, "completion_tokens": 21}),
                           status(503)])
    with serve_asgi(build_app(SupportDesk())) as mcp_url:
        register_soporte(alpha, mcp_url)
        with serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1"):
            turn = run(alpha, post(alpha, "¿Tienen routers?"))
    assert turn.status == Turn.Status.FAILED and turn.error_code == "model_http_error"
    assert steps_of(alpha, turn) == [("model", "done", 812, 21), ("tool", "done", None, None), ("model", "failed", None, None)]
    totals = usage_totals(alpha)
    assert (totals["model_requests"], totals["failed_requests"], totals["requests_without_usage"]) == (2, 1, 0)
    assert (totals["tokens_in"], totals["tokens_out"]) == (812, 21)
    overview = alpha.dashboard("ana").get("/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "<tr><th>Failed model requests</th><td>1</td><td>1</td></tr>" in overview


def test_a_request_that_never_left_counts_nothing(alpha):
    """Issue 20: no model configured: the turn fails without a request, so none is counted."""
    with tenant_settings(alpha, model_base_url="", model_name=""):
        turn = run(alpha, post(alpha, "Hola"))
    assert turn.status == Turn.Status.FAILED and turn.error_code == "model_not_configured"
    assert steps_of(alpha, turn) == []
    totals = usage_totals(alpha)
    assert (totals["turns"], totals["model_requests"], totals["failed_requests"]) == (1, 0, 0)
