"""Tokens of every model request, recorded on the turn's step that stores the model's answer
(issue 20): `usage.prompt_tokens` and `usage.completion_tokens` as the model server reported
them; an answer without `usage` leaves them empty (null), never 0."""

import pytest

from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from runtime.models import Turn, TurnStep
from tests.runtime.runtime_support import agent, post, register_soporte, run
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, say


@pytest.fixture
def soporte(alpha):
    with serve_asgi(build_app(SupportDesk())) as url:
        register_soporte(alpha, url)
        yield


def steps_of(world, turn):
    with world.schema():
        return [(step.kind, step.tokens_in, step.tokens_out) for step in TurnStep.objects.filter(turn=turn)]


def test_it_records_the_tokens_of_each_model_request(alpha, soporte):
    """R11, issue 20: the loop's model calls and the reply request each keep their own counts."""
    model = ScriptedModel([
        call("soporte__buscar_producto", {"consulta": "router"}, usage={"prompt_tokens": 812, "completion_tokens": 21}),
        say("Tenemos el Router WiFi 6.", usage={"prompt_tokens": 950, "completion_tokens": 12}),
        say("Sí, el Router WiFi 6 está disponible.", usage={"prompt_tokens": 400, "completion_tokens": 15}),
    ])
    with serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "¿Tienen routers?"))
    assert turn.status == Turn.Status.DONE
    assert steps_of(alpha, turn) == [("model", 812, 21), ("tool", None, None), ("model", 950, 12), ("reply", 400, 15)]


def test_an_answer_without_usage_leaves_the_counts_empty(alpha):
    """Issue 20: no `usage` in the answer (or a malformed one) → null, not 0; a partial one keeps
    what it says."""
    model = ScriptedModel([say("Hola, ¿en qué le ayudo?", usage=None)])
    with serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "Hola"))
    assert turn.status == Turn.Status.DONE and steps_of(alpha, turn) == [("model", None, None)]

    for usage, expected in [({"prompt_tokens": "many", "completion_tokens": -3}, (None, None)),
                            ({"prompt_tokens": 77}, (77, None)), ({"prompt_tokens": True, "completion_tokens": 5}, (None, 5))]:
        model = ScriptedModel([say("Hola.", usage=usage)])
        with serve_asgi(model.app()) as url, agent(alpha, f"{url}/v1"):
            turn = run(alpha, post(alpha, "Hola"))
        assert steps_of(alpha, turn) == [("model", *expected)]
