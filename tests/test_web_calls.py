"""Calls the web tier makes to a tenant's own systems while a request waits (asixto/web_calls.py,
issue 19 M4, found by a security review: 24 model tests of one tenant made another tenant's plain
GET wait 47 s): per tenant and per web process at most so many at once; beyond, 429 with
Retry-After before anything is sent, on the API and the dashboard alike."""

from django.db import connection

from asixto.web_calls import web_call_slot
from tests.runtime.runtime_support import agent
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, say


def model_test(world):
    return world.api().post("/api/v1/tenant/model-test")


def test_a_tenant_at_its_calls_gets_a_429_and_another_tenant_does_not(alpha, beta, settings):
    """While one call of alpha's runs (its limit: 1), alpha's model test is refused with 429 and
    Retry-After and its model gets no request; beta's goes through; once alpha's call ends, so
    does alpha's next."""
    settings.ASIXTO_WEB_CALLS_PER_TENANT = 1
    model = ScriptedModel([say("OK"), say("OK"), say("OK")])
    with serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1"), agent(beta, f"{url}/v1"):
        with alpha.schema(), web_call_slot():  # a call of alpha's, still running
            refused = model_test(alpha)
            assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1, refused.content
            assert len(model.requests) == 0
            assert model_test(beta).json()["ok"] is True
            page = alpha.dashboard("ana").post("/settings/model-test/", follow=True)
            assert page.status_code == 200 and len(model.requests) == 1
        connection.set_schema_to_public()
        assert model_test(alpha).json()["ok"] is True and len(model.requests) == 2
        connection.set_schema_to_public()


def test_a_process_keeps_threads_for_everything_else(alpha, beta, settings):
    """With the process's calls at their limit (1), another tenant's call is refused too, and
    its server is not called: a quarter of the threads by default, the rest serve other requests."""
    settings.ASIXTO_WEB_CALLS_PER_PROCESS = 1
    model = ScriptedModel([say("OK")])
    with serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1"):
        with beta.schema(), web_call_slot():
            assert model_test(alpha).status_code == 429 and model.requests == []
            assert alpha.api().get("/api/v1/tenant").status_code == 200
        connection.set_schema_to_public()
        assert model_test(alpha).json()["ok"] is True
        connection.set_schema_to_public()
