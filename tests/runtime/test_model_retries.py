"""A model request that fails for a passing reason is sent again (R11, issue 19 "transient faults
resume, never fail"): a connection the server dropped or that went stale in the pool, 408, 409,
429 and 5xx, at most ASIXTO_MODEL_RETRIES times, never past the answer's deadline. What is not
passing (a 4xx such as a bad key, a bad answer) is reported at once, after one request."""

import pytest

from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from runtime.model_client import Endpoint, ModelError, complete
from runtime.models import Turn
from runtime.turn import acted_failure_reply, failure_reply
from tests.runtime.runtime_support import agent, post, register_soporte, run
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import DroppingModel, ScriptedModel, call, say, status

KEY = "sk-test-secret-0042"
HELLO = [{"role": "user", "content": "hola"}]


def ask(url, **kwargs):
    return complete(endpoint=Endpoint(url, "scripted", KEY), messages=HELLO, **kwargs)


def test_a_pooled_connection_the_server_closed_is_not_a_failure():
    """R11: the first request is answered on a connection kept alive; the server then closes it
    as the second request arrives (a stale keep-alive, as a load balancer's idle timeout makes):
    the second request is sent again on a new connection and answered."""
    with DroppingModel(["answer", "drop", "answer"], say("hola")) as model:
        assert ask(model.url).content == "hola"
        assert ask(model.url).content == "hola"
    assert (model.requests, model.connections) == (3, 2)


@pytest.mark.parametrize("code", [408, 409, 429, 500, 502, 503, 504])
def test_a_passing_status_is_asked_again_and_answered(code):
    """R11: a status that says "later" (with Retry-After: 0) and then an answer: the answer."""
    model = ScriptedModel([status(code, retry_after="0"), say("hola")])
    with serve_asgi(model.app()) as url:
        assert ask(f"{url}/v1").content == "hola"
    assert len(model.requests) == 2


@pytest.mark.parametrize("code", [400, 401, 403, 404, 422])
def test_a_refusal_is_reported_after_one_request(code):
    """R11: a bad key, a missing model, a malformed request: sending it again changes nothing."""
    model = ScriptedModel([status(code), say("hola")])
    with serve_asgi(model.app()) as url, pytest.raises(ModelError) as raised:
        ask(f"{url}/v1")
    assert (raised.value.code, raised.value.status, len(model.requests)) == ("model_http_error", code, 1)


def test_retries_are_bounded_by_the_setting(settings):
    """R11: a server that keeps failing is asked 1 + ASIXTO_MODEL_RETRIES times, then its error is
    reported as it came."""
    settings.ASIXTO_MODEL_RETRIES = 3
    model = ScriptedModel([status(503, retry_after="0")])
    with serve_asgi(model.app()) as url, pytest.raises(ModelError) as raised:
        ask(f"{url}/v1")
    assert (raised.value.code, raised.value.status, len(model.requests)) == ("model_http_error", 503, 4)
    settings.ASIXTO_MODEL_RETRIES = 0
    model = ScriptedModel([status(503, retry_after="0"), say("hola")])
    with serve_asgi(model.app()) as url, pytest.raises(ModelError):
        ask(f"{url}/v1")
    assert len(model.requests) == 1


@pytest.mark.parametrize("retry_after", ["3600", "Wed, 21 Oct 2099 07:28:00 GMT"])
def test_a_wait_past_the_deadline_is_not_made(retry_after):
    """R11: a server asking to come back after the answer's deadline: no wait, no second request;
    its 429 is reported (a customer is not kept waiting for an answer that cannot come in time)."""
    model = ScriptedModel([status(429, retry_after=retry_after), say("hola")])
    with serve_asgi(model.app()) as url, pytest.raises(ModelError) as raised:
        ask(f"{url}/v1", deadline=30)
    assert (raised.value.status, len(model.requests)) == (429, 1)


@pytest.mark.parametrize("retry_after", ["²", "-1", "soon", "1e999"])
def test_a_retry_after_that_is_not_a_number_is_a_short_pause(retry_after):
    """R11, A4: a Retry-After header that says nothing usable: the client's own short pause, then
    the answer (never an exception of its own)."""
    model = ScriptedModel([status(503, retry_after=retry_after), say("hola")])
    with serve_asgi(model.app()) as url:
        assert ask(f"{url}/v1").content == "hola"
    assert len(model.requests) == 2


def test_a_turn_whose_model_connection_drops_once_is_answered(alpha):
    """R11, issue 19: a customer's turn is not failed because one model request lost its
    connection: the request is sent again and the turn ends with the model's reply."""
    with DroppingModel(["drop", "answer"], say("Hola, ¿en qué te ayudo?")) as model, agent(alpha, model.url):
        turn = run(alpha, post(alpha, "Hola"))
    assert (turn.status, turn.error_code, turn.reply.text) == (Turn.Status.DONE, "", "Hola, ¿en qué te ayudo?")
    assert model.requests >= 2


OPEN_CASE = "soporte__abrir_caso_soporte"
CASE = {"documento": "1020304050", "tipo": "falla", "descripcion": "No tengo internet desde ayer."}


@pytest.mark.parametrize("language, text", [("es", "Ábreme un caso, no tengo internet desde ayer"),
                                            ("en", "Please open a case for me, my internet has been down since yesterday")])
def test_a_model_that_fails_after_a_tool_acted_never_asks_the_customer_to_try_again(alpha, language, text):
    """Issue 19 ("a turn whose side effect already happened never tells the customer to try
    again"), R11, R7: the model asks for a case to be opened, the server opens it, and every model
    request after that fails (503, retried and still failing). The reply says the request went
    through and need not be asked again, in the customer's language, not "try again": a customer
    who tried again would open a second case."""
    desk = SupportDesk()
    model = ScriptedModel([call(OPEN_CASE, CASE), status(503, retry_after="0")])
    with serve_asgi(build_app(desk)) as tool_url, serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1"):
        register_soporte(alpha, tool_url)
        turn = run(alpha, post(alpha, text, language=language))
    assert (turn.status, turn.error_code, desk.case_count) == (Turn.Status.FAILED, "model_http_error", 1)
    assert turn.reply.text == acted_failure_reply(language) != failure_reply(language)


def test_a_model_that_fails_after_only_reading_still_says_try_again(alpha):
    """Issue 19, R11: after a tool that only reads, nothing was done, so "try again" is right."""
    model = ScriptedModel([call("soporte__buscar_producto", {"consulta": "router"}), status(503, retry_after="0")])
    with serve_asgi(build_app(SupportDesk())) as tool_url, serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1"):
        register_soporte(alpha, tool_url)
        turn = run(alpha, post(alpha, "¿Tienen routers?", language="es"))
    assert (turn.status, turn.reply.text) == (Turn.Status.FAILED, failure_reply("es"))
