"""The model endpoint's connection test (issue 20, R11, T3, T7, A3): `POST /api/v1/tenant/model-test`
and the settings page's button send one small request to the configured model through the model
client, and answer ok or the failure's code and message, with the time it took — never the key."""

from tests.runtime.runtime_support import agent, tenant_settings
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, dead_url, garbage, say, status

KEY = "sk-test-secret-0042"  # runtime_support.agent's key


def model_test(world, key=None, language="en"):
    return world.api(key).post("/api/v1/tenant/model-test", HTTP_ACCEPT_LANGUAGE=language)


def test_it_answers_ok_with_the_time_against_the_model_stub(alpha):
    """Issue 20, R11: one small request (a short message, a small max_tokens, no tools) with the
    key in its header; ok, the model's name, the time and its token counts."""
    model = ScriptedModel([say("OK", usage={"prompt_tokens": 14, "completion_tokens": 1})])
    with serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1"):
        response = model_test(alpha)
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["ok"], body["code"], body["model"], body["detail"], body["status"]) == (True, "ok", "scripted", "", None)
    assert body["duration_ms"] > 0 and (body["tokens_in"], body["tokens_out"]) == (14, 1)
    assert "scripted answered in" in body["message"]
    [request] = model.requests
    assert len(request["messages"]) == 1 and request["max_tokens"] == 32 and "tools" not in request
    assert model.headers[0]["authorization"] == f"Bearer {KEY}" and KEY not in response.content.decode()


def test_a_closed_port_gives_the_failure_code_and_message(alpha):
    """Issue 20, A3: nothing listening → model_unreachable, with a message in the request's language."""
    with agent(alpha, dead_url()):
        body = model_test(alpha).json()
        spanish = model_test(alpha, language="es").json()
    assert (body["ok"], body["code"]) == (False, "model_unreachable")
    assert body["message"] == "Could not connect to the model endpoint." and body["detail"]
    assert spanish["code"] == "model_unreachable" and spanish["message"] != body["message"]


def test_an_http_error_gives_its_status_and_never_the_key(alpha):
    """Issue 20, T7: a 500 (or 401) whose body quotes the key: the status and the server's message,
    with the key blanked out; a body that is not an answer is model_bad_response."""
    echo = '{"error": {"message": "upstream failed for key %s"}}' % KEY
    for move, code, http_status in [(status(500, echo), "model_http_error", 500), (status(401, echo), "model_http_error", 401),
                                    (garbage(), "model_bad_response", None)]:
        model = ScriptedModel([move])
        with serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1"):
            response = model_test(alpha)
        body = response.json()
        assert (response.status_code, body["ok"], body["code"], body["status"]) == (200, False, code, http_status), body
        assert KEY not in response.content.decode()
        if http_status:
            assert f"HTTP {http_status}" in body["detail"] and "upstream failed for key ***" in body["detail"]


def test_no_endpoint_configured_and_refused_keys(alpha):
    """Issue 20, T3: without an endpoint → model_not_configured, no request made; channel keys are refused."""
    with tenant_settings(alpha, model_base_url="", model_name=""):
        body = model_test(alpha).json()
    assert (body["ok"], body["code"]) == (False, "model_not_configured")
    assert model_test(alpha, key=alpha.channel_key).status_code == 403


def test_the_settings_page_button_shows_the_outcome(alpha):
    """Issue 20, T4: an admin presses "Test connection" and reads the outcome on the settings
    page; support staff cannot."""
    model = ScriptedModel([say("OK")])
    with serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1"):
        client = alpha.dashboard("ana")
        assert 'action="/settings/model-test/"' in client.get("/settings/").content.decode()
        page = client.post("/settings/model-test/", follow=True)
        assert alpha.dashboard("sam").post("/settings/model-test/").status_code == 403
    assert page.status_code == 200 and len(model.requests) == 1
    assert "scripted" in page.content.decode() and 'class="message success"' in page.content.decode()
    with agent(alpha, dead_url()):
        page = alpha.dashboard("ana").post("/settings/model-test/", follow=True).content.decode()
    assert 'class="message error"' in page and "model_unreachable" in page and KEY not in page
