"""Routed turns end to end (R6, R7, R8): a scripted model on loopback plays the router and the
agent, the example support server is a real MCP server, every call goes through the gateway."""

import json

import pytest

from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from runtime.models import Turn, TurnStep
from runtime.routing.index_store import build_live
from tests.runtime.runtime_support import agent, post, recording_app, register_soporte, run, tool_calls_seen
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, say, status

SEARCH = "soporte__buscar_producto"
CATALOG_ORDER = ["soporte__abrir_caso_soporte", "soporte__consultar_caso", "soporte__buscar_producto"]
FACTS = {"tool": SEARCH, "request": "routers disponibles", "quantity": None, "references": None,
         "details": {"consulta": "router"}, "clear": True}
REASK_MARK = 'The step "buscar un producto del catálogo" was skipped'


@pytest.fixture(autouse=True)
def routing_on(settings):
    settings.ASIXTO_ROUTING = True


@pytest.fixture
def soporte(alpha):
    desk, log = SupportDesk(), []
    with serve_asgi(recording_app(build_app(desk), log)) as url:
        register_soporte(alpha, url)
        with alpha.schema():
            build_live()  # what the task queued by the sync does (runtime/routing/index_store.py)
        yield desk, log


def serve_model(script):
    model = ScriptedModel(script)
    return model, serve_asgi(model.app())


def system_of(request):
    return request["messages"][0]["content"]


def test_a_routed_turn_shows_the_one_tool_with_the_platforms_instruction(alpha, soporte):
    """R6, R2: the router reads only the conversation (no instructions, no tools) and returns facts;
    the first iteration shows the routed tool alone, with the instruction the platform composed
    from its verb and schema, and no tool_choice; later iterations are as always. Issue 20: the
    router request's tokens are kept on its step."""
    _desk, log = soporte
    model, served = serve_model([
        say(json.dumps(FACTS), usage={"prompt_tokens": 230, "completion_tokens": 40}), call(SEARCH, {"consulta": "router"}),
        say("Hay un router."), say("Sí: el Router WiFi 6 doble banda cuesta $ 189.900."),
    ])
    with served as url, agent(alpha, f"{url}/v1", agent_instructions="Eres el asistente de Alfa Telecom."):
        turn = run(alpha, post(alpha, "¿Tienen routers disponibles?"))
    assert turn.status == Turn.Status.DONE and turn.reply.text == "Sí: el Router WiFi 6 doble banda cuesta $ 189.900."
    router, routed, after, reply = model.requests
    assert "tools" not in router and "Alfa Telecom" not in json.dumps(router, ensure_ascii=False)
    assert "¿Tienen routers disponibles?" in router["messages"][-1]["content"]
    assert model.tool_names(1) == [SEARCH] and "tool_choice" not in routed
    instruction = system_of(routed)
    assert "Alfa Telecom" in instruction and '"buscar un producto del catálogo"' in instruction
    assert "routers disponibles" in instruction and '{"consulta": "router"}' in instruction
    assert model.tool_names(2) == CATALOG_ORDER and '"buscar un producto' not in system_of(after)
    assert tool_calls_seen(log)[0][:2] == ("buscar_producto", {"consulta": "router"})
    assert "tools" not in reply
    with alpha.schema():
        steps = list(TurnStep.objects.filter(turn=turn).order_by("index"))
    assert [s.kind for s in steps] == ["model", "model", "tool", "model", "reply"]
    assert steps[0].response["route"]["tool"] == SEARCH and steps[0].response["routing"]["outcome"] == "routed"
    assert (steps[0].tokens_in, steps[0].tokens_out) == (230, 40)  # the router's request, issue 20
    assert "router_tokens" not in steps[0].response["routing"]
    assert steps[2].idempotency_key == f"turn:{turn.pk}:step:3"


def test_an_ordinary_question_pays_no_router_call(alpha, soporte):
    """R6: a greeting costs one model call, as without routing; nothing about routing is stored."""
    model, served = serve_model([say("¡Hola! ¿En qué te ayudo?")])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "Hola, buenas tardes"))
    assert turn.reply.text == "¡Hola! ¿En qué te ayudo?" and len(model.requests) == 1
    assert model.tool_names(0) == CATALOG_ORDER


@pytest.mark.parametrize("router_answer", [
    say("Creo que quiere un router."),
    say(json.dumps({**FACTS, "clear": False})),
    say(json.dumps({**FACTS, "tool": "soporte__borrar_clientes"})),
    say(json.dumps({**FACTS, "quantity": "muchos"})),
    status(500),
], ids=["prose", "unclear", "not-a-candidate", "schema", "router-error"])
def test_unclear_router_output_leaves_the_turn_unrouted(alpha, soporte, router_answer):
    """R6: invalid, unclear or failed router output → the turn proceeds exactly as without routing
    (every tool offered, no composed instruction, no re-ask)."""
    model, served = serve_model([router_answer, call(SEARCH, {"consulta": "router"}), say("ok"), say("Hay routers.")])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "¿Tienen routers disponibles?"))
    assert turn.status == Turn.Status.DONE and turn.reply.text == "Hay routers."
    assert model.tool_names(1) == CATALOG_ORDER and "buscar un producto del catálogo\"" not in system_of(model.requests[1])
    with alpha.schema():
        first = TurnStep.objects.get(turn=turn, index=1)
    assert first.response["route"] is None and first.response["routing"]["outcome"] == "unclear"
    # Issue 20: a router request that failed is a failed model request in usage; its decision stays.
    assert first.state == ("failed" if router_answer.status == 500 else "done")
    assert "router_failed" not in first.response["routing"]


def test_the_router_endpoint_of_the_tenant_is_used_when_set(alpha, soporte):
    """R6, T6: the router call goes to the tenant's router model; the agent's model never sees it."""
    router_model, router_served = serve_model([say(json.dumps(FACTS))])
    model, served = serve_model([call(SEARCH, {"consulta": "router"}), say("ok"), say("Hay routers.")])
    with router_served as router_url, served as url, agent(
            alpha, f"{url}/v1", router_base_url=f"{router_url}/v1", router_model_name="small", router_api_key="sk-r"):
        turn = run(alpha, post(alpha, "¿Tienen routers disponibles?"))
    assert turn.reply.text == "Hay routers." and len(router_model.requests) == 1
    assert router_model.requests[0]["model"] == "small" and router_model.headers[0]["authorization"] == "Bearer sk-r"
    assert model.tool_names(0) == [SEARCH]


def test_a_spanish_customer_gets_a_spanish_reply_whatever_the_instruction_language(alpha, soporte):
    """R7: the channel said English, the agent's instructions and the composed instruction are in
    English, the customer writes Spanish: every request pins the reply to Spanish."""
    model, served = serve_model([
        say(json.dumps(FACTS)), call(SEARCH, {"consulta": "router"}), say("ok"), say("Sí, tenemos routers."),
    ])
    with served as url, agent(alpha, f"{url}/v1", agent_instructions="You are Alfa Telecom's assistant."):
        turn = run(alpha, post(alpha, "¿Tienen routers disponibles en color rojo?", language="en"))
    routed, reply = model.requests[1], model.requests[3]
    assert "The customer's message asks for this step" in system_of(routed)
    # Written in the pinned language, which the requests are composed in (A3).
    assert "Responde siempre al cliente en español." in system_of(routed)
    assert "Responde siempre al cliente en español." in system_of(reply)
    assert turn.reply.text == "Sí, tenemos routers."


def test_prose_instead_of_delivery_is_asked_again_exactly_once(alpha, soporte):
    """R8: the routed step answered in prose without calling its tool: the model is asked once more,
    naming the skipped step, shown that tool again, with an honest way out; then the turn goes on."""
    _desk, log = soporte
    model, served = serve_model([
        say(json.dumps(FACTS)), say("Tenemos routers muy buenos, te van a encantar."),
        call(SEARCH, {"consulta": "router"}), say("ok"), say("El Router WiFi 6 cuesta $ 189.900."),
    ])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "¿Tienen routers disponibles?"))
    assert turn.reply.text == "El Router WiFi 6 cuesta $ 189.900."
    reasked = model.requests[2]
    assert model.tool_names(2) == [SEARCH]
    assert reasked["messages"][-2] == {"role": "assistant", "content": "Tenemos routers muy buenos, te van a encantar."}
    assert REASK_MARK in reasked["messages"][-1]["content"] and "say so plainly" in reasked["messages"][-1]["content"]
    assert len(tool_calls_seen(log)) == 1
    assert [n for n, r in enumerate(model.requests) if REASK_MARK in (r["messages"][-1]["content"] or "")] == [2]


def test_a_routed_tool_that_answered_a_business_error_is_not_called_again(alpha, soporte):
    """R8, G2 (found by exploratory testing): the routed tool was called and answered "no case with
    that number" (a business error is an answer); the model tells the customer in prose. That is
    delivered: no re-ask claiming the tool was not called, and the tool is called once."""
    _desk, log = soporte
    case_facts = {**FACTS, "tool": "soporte__consultar_caso", "request": "estado del caso",
                  "details": {"radicado": "SOP-999999"}}
    model, served = serve_model([
        say(json.dumps(case_facts)), call("soporte__consultar_caso", {"radicado": "SOP-999999"}),
        say("No encontré un caso con ese número. ¿Lo puedes revisar?"), say("No encontré ese caso."),
    ])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "¿Cómo va mi caso SOP-999999?"))
    assert turn.status == Turn.Status.DONE
    assert [name for name, _args, _key in tool_calls_seen(log)] == ["consultar_caso"]
    with alpha.schema():
        assert TurnStep.objects.get(turn=turn, kind="tool").outcome == "business_error"
    assert not any("was skipped" in (r["messages"][-1]["content"] or "") for r in model.requests)


@pytest.mark.parametrize("fake", [
    "Estos son los productos que encontré:\n```\n```",
    "Busqué en el catálogo y hay varios routers disponibles.",
])
def test_fake_delivery_is_nothing_delivered_and_the_honest_exit_is_honoured(alpha, soporte, fake):
    """R8: an empty block or a mention of a search that never ran counts as nothing delivered: one
    re-ask. The model then takes the honest way out: that answer is the reply, with no second re-ask."""
    _desk, log = soporte
    model, served = serve_model([say(json.dumps(FACTS)), say(fake), say("No encontré un router que encaje, lo siento.")])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "¿Tienen routers disponibles?"))
    assert turn.status == Turn.Status.DONE and turn.reply.text == "No encontré un router que encaje, lo siento."
    assert len(model.requests) == 3 and REASK_MARK in model.requests[2]["messages"][-1]["content"]
    assert tool_calls_seen(log) == []


def test_a_routed_turn_run_again_replays_the_decision(alpha, soporte):
    """R6, R10: the routing decision is a stored step: a turn run again after it does not ask the
    router again, and its first iteration is routed as before."""
    model, served = serve_model([say(json.dumps(FACTS)), call(SEARCH, {"consulta": "router"}), say("ok"), say("Hay routers.")])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "¿Tienen routers disponibles?"))
    with alpha.schema():  # as if the worker had died right after the routing step
        TurnStep.objects.filter(turn=turn, index__gt=1).delete()
        Turn.objects.filter(pk=turn.pk).update(status=Turn.Status.QUEUED, reply=None, runner="", lease_expires_at=None)
    again, served = serve_model([call(SEARCH, {"consulta": "router"}), say("ok"), say("Hay routers, sí.")])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, turn)
    assert turn.reply.text == "Hay routers, sí." and len(again.requests) == 3
    assert again.tool_names(0) == [SEARCH] and '"buscar un producto del catálogo"' in system_of(again.requests[0])
