"""The model client (R11) against a scripted OpenAI-compatible server on loopback, and what a turn
does with each way a model endpoint can fail: an honest reply in the customer's language, the
error recorded, never a crash or a hang, never the key in a log or an error."""

import logging

import pytest

from runtime.model_client import Endpoint, ModelError, complete
from runtime.models import Turn, TurnEvent
from runtime.turn import failure_reply
from tests.runtime.runtime_support import agent, post, run, tenant_settings
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, dead_url, empty, garbage, say, slow, status

KEY = "sk-test-secret-0042"
TOOLS = [{"type": "function", "function": {"name": f"t{n}", "description": "d", "parameters": {"type": "object"}}}
         for n in range(3)]


def ask(move, **kwargs):
    model = ScriptedModel([move])
    with serve_asgi(model.app()) as url:
        answer = complete(endpoint=Endpoint(f"{url}/v1", "scripted", KEY), messages=[{"role": "user", "content": "hola"}],
                          **kwargs)
    return answer, model


def failure(move, **kwargs) -> ModelError:
    with pytest.raises(ModelError) as raised:
        ask(move, **kwargs)
    return raised.value


def test_it_sends_the_model_the_key_and_the_tools_in_order():
    """R11, R2: one POST to /chat/completions with the model name, the messages, the tools in
    the given order, and the key as a bearer token (in that header only)."""
    answer, model = ask(say("hola"), tools=TOOLS)
    assert answer.content == "hola" and answer.tool_calls == ()
    request = model.requests[0]
    assert request["model"] == "scripted" and request["stream"] is False
    assert [t["function"]["name"] for t in request["tools"]] == ["t0", "t1", "t2"] and "tool_choice" not in request
    assert model.headers[0]["authorization"] == f"Bearer {KEY}"
    assert KEY not in str(request)


def test_it_reads_native_tool_calls():
    """R11: tool calls come back as name + the JSON text of the arguments."""
    answer, _model = ask(call("soporte__buscar_producto", {"consulta": "router"}))
    assert [(c.name, c.arguments) for c in answer.tool_calls] == [("soporte__buscar_producto", '{"consulta": "router"}')]


@pytest.mark.parametrize("move, code, status_code", [
    (status(500), "model_http_error", 500),
    (status(503, "upstream down"), "model_http_error", 503),
    (status(404, '{"error": {"message": "model scripted not found"}}'), "model_http_error", 404),
    (garbage(), "model_bad_response", None),
    (empty(), "model_empty", None),
    (say(""), "model_empty", None),
])
def test_it_names_each_failure(move, code, status_code):
    """R11: 4xx, 5xx, a body that is not JSON, no choice, an empty choice: each a clear error."""
    error = failure(move)
    assert (error.code, error.status) == (code, status_code)


def test_it_never_repeats_the_key_in_an_error():
    """R11, T7: a server that echoes the key in its error body: the detail has it masked."""
    error = failure(status(401, f'{{"error": {{"message": "Incorrect API key provided: {KEY}"}}}}'))
    assert error.code == "model_http_error" and KEY not in error.detail and "***" in error.detail


def test_it_gives_up_on_a_slow_model_at_the_deadline():
    """R11: no silent hang: past the deadline the call ends with a timeout."""
    assert failure(slow(say("tarde"), 5), deadline=1).code == "model_timeout"


def test_it_reports_an_endpoint_where_nothing_listens():
    """R11: connection refused → unreachable."""
    with pytest.raises(ModelError) as raised:
        complete(endpoint=Endpoint(dead_url(), "m", KEY), messages=[{"role": "user", "content": "x"}])
    assert raised.value.code == "model_unreachable"


def test_it_applies_the_outbound_rules_to_the_model_endpoint(settings):
    """M2, R11: the tenant's endpoint is checked like an MCP server: loopback is refused in production."""
    settings.ASIXTO_ALLOW_PRIVATE_HOSTS = False
    with pytest.raises(ModelError) as raised:
        complete(endpoint=Endpoint("https://127.0.0.1:9/v1", "m", KEY), messages=[{"role": "user", "content": "x"}])
    assert raised.value.code == "model_refused"


@pytest.mark.parametrize("move, code", [
    (status(500), "model_http_error"),
    (status(401, f'{{"error": "bad key {KEY}"}}'), "model_http_error"),
    (garbage(), "model_bad_response"),
    (empty(), "model_empty"),
    (None, "model_unreachable"),
    (slow(say("tarde"), 5), "model_timeout"),
])
@pytest.mark.parametrize("language", ["es", "en"])
def test_a_failing_model_ends_the_turn_with_an_honest_reply(alpha, settings, caplog, move, code, language):
    """R11, R7, A4: each failure ends the turn as failed with the error recorded and an honest
    reply in the customer's language (the reply event too); the key appears in no log line."""
    settings.ASIXTO_MODEL_TIMEOUT = 1
    caplog.set_level(logging.DEBUG)
    if move is None:
        with agent(alpha, dead_url()):
            turn = run(alpha, post(alpha, "Hola", language=language))
    else:
        model = ScriptedModel([move])
        with serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1"):
            turn = run(alpha, post(alpha, "Hola", language=language))
    assert (turn.status, turn.error_code) == (Turn.Status.FAILED, code)
    assert turn.reply.text == failure_reply(language) and turn.finished_at is not None
    with alpha.schema():
        event = TurnEvent.objects.get(turn=turn, kind="reply")
    assert event.text == turn.reply.text and event.data == {"status": "failed", "error": code}
    assert KEY not in turn.error_detail and all(KEY not in record.getMessage() for record in caplog.records)


def test_a_turn_without_a_model_configured_says_so_honestly(alpha):
    """R11, T6: no endpoint in the agent settings: an honest reply and `model_not_configured`."""
    with tenant_settings(alpha, model_base_url="", model_name=""):
        turn = run(alpha, post(alpha, "Hola", language="en"))
    assert (turn.status, turn.error_code, turn.reply.text) == ("failed", "model_not_configured", failure_reply("en"))
    assert failure_reply("en") == "Sorry, I cannot answer right now. Please try again in a few minutes."
