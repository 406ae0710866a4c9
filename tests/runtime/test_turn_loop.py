"""The turn service end to end, run here as a worker would: a scripted model on loopback, the
example support server as a real MCP server, every tool call through the gateway (R2, R3, R5, R9)."""

import pytest
from django.utils import translation

from examples.soporte.desk import SupportDesk
from examples.soporte.server import build_app
from runtime.events import status_text
from runtime.models import Message, Turn, TurnEvent, TurnStep
from runtime.textcalls import TEXT_CALLS_NOT_RUN
from runtime.turn import MAX_CALLS_PER_ANSWER, calls_not_run, no_answer_reply
from tests.runtime.runtime_support import agent, post, recording_app, register_soporte, run, tool_calls_seen
from tests.support.mcp_servers import serve_asgi
from tests.support.model_server import ScriptedModel, call, calls, say
from tools.models import ToolCall

SEARCH = "soporte__buscar_producto"
OPEN_CASE = "soporte__abrir_caso_soporte"
CATALOG_ORDER = ["soporte__abrir_caso_soporte", "soporte__consultar_caso", "soporte__buscar_producto"]


@pytest.fixture
def soporte(alpha):
    """The example support server, registered for alpha; yields (desk, requests it received)."""
    desk, log = SupportDesk(), []
    with serve_asgi(recording_app(build_app(desk), log)) as url:
        register_soporte(alpha, url)
        yield desk, log


def serve_model(script):
    model = ScriptedModel(script)
    return model, serve_asgi(model.app())


def test_it_answers_with_a_tool_result_through_a_clean_reply_request(alpha, soporte):
    """R2, R3, R9, R10, G1: the model asks for a tool natively (tools offered in catalog order);
    the gateway calls it with an idempotency key derived from the turn and the step; the model
    reads the result; the reply is written from a clean request (instructions, summary, facts,
    question — no tools, no raw loop); a status event from the tool's verb comes first."""
    _desk, log = soporte
    model, served = serve_model([
        call(SEARCH, {"consulta": "router"}),
        say("Tenemos el Router WiFi 6."),
        say("Sí: el Router WiFi 6 doble banda cuesta $ 189.900 y está disponible."),
    ])
    with served as url, agent(alpha, f"{url}/v1", agent_instructions="Eres el asistente de Alfa Telecom."):
        turn = run(alpha, post(alpha, "¿Tienen routers?"))
    assert turn.status == Turn.Status.DONE and turn.error_code == ""
    assert turn.reply.text == "Sí: el Router WiFi 6 doble banda cuesta $ 189.900 y está disponible."

    first, second, reply_request = model.requests
    assert model.tool_names(0) == CATALOG_ORDER == model.tool_names(1)
    assert "Eres el asistente de Alfa Telecom." in first["messages"][0]["content"]
    assert first["messages"][-1] == {"role": "user", "content": "¿Tienen routers?"}
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool" and "Router WiFi 6 doble banda" in tool_message["content"]
    assert "tools" not in reply_request and [m["role"] for m in reply_request["messages"]] == ["system", "user"]
    clean = reply_request["messages"][1]["content"]
    assert "Router WiFi 6 doble banda" in clean and clean.rstrip().endswith("¿Tienen routers?")
    assert "tool_call" not in str(reply_request) and SEARCH not in clean

    key = f"turn:{turn.pk}:step:2"
    assert tool_calls_seen(log) == [("buscar_producto", {"consulta": "router"}, key)]
    with alpha.schema():
        record = ToolCall.objects.get(turn_id=turn.pk)
        assert (record.idempotency_key, record.outcome, record.conversation_id) == (key, "ok", str(turn.conversation_id))
        kinds = [(e.kind, e.text) for e in TurnEvent.objects.filter(turn=turn).order_by("id")]
        assert [s.kind for s in TurnStep.objects.filter(turn=turn)] == ["model", "tool", "model", "reply"]
    assert kinds == [("status", "Buscando el producto del catálogo…"), ("reply", turn.reply.text)]


def test_it_sends_the_conversations_context_with_every_call(alpha, soporte):
    """G1, R1: currency, price list, timezone and channel of the conversation reach the tool's _meta."""
    _desk, log = soporte
    model, served = serve_model([call(SEARCH, {"consulta": "módem"}), say("listo"), say("Hay un módem.")])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "¿Módem?", currency="USD", price_list_id="pl_hogar", timezone="Europe/Madrid",
                                channel_kind="voice"))
    meta = [r for r in log if r.get("method") == "tools/call"][0]["params"]["_meta"]
    assert (meta["com.asixto/currency"], meta["com.asixto/priceListId"], meta["com.asixto/timezone"]) == (
        "USD", "pl_hogar", "Europe/Madrid")
    assert meta["com.asixto/channel"] == "voice" and meta["com.asixto/conversationId"] == str(turn.conversation_id)


def test_it_answers_without_tools_in_one_model_call(alpha, soporte):
    """R2, R3: a question that needs no tool costs one model call; that request already was the
    clean one (instructions, conversation, question), so its answer is the reply."""
    model, served = serve_model([say("¡Hola! ¿En qué te ayudo?")])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "Hola"))
    assert turn.reply.text == "¡Hola! ¿En qué te ayudo?" and len(model.requests) == 1
    with alpha.schema():
        assert not TurnEvent.objects.filter(turn=turn, kind="status").exists()


def test_it_executes_a_tool_call_written_as_text_and_strips_it(alpha, soporte):
    """R5: a call the model writes as `<tool_call>{json}</tool_call>` is executed; neither it nor
    its debris reaches the customer."""
    _desk, log = soporte
    text_call = '<tool_call>{"name": "soporte__consultar_caso", "arguments": {"radicado": "SOP-1"}}</tool_call>'
    model, served = serve_model([say(text_call), say("No existe."), say("No encontré ese caso.<|im_end|>")])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "¿Cómo va el caso SOP-1?"))
    assert tool_calls_seen(log)[0][:2] == ("consultar_caso", {"radicado": "SOP-1"})
    assert "NOT_FOUND" in model.requests[1]["messages"][-1]["content"]
    assert turn.reply.text == "No encontré ese caso."


def test_call_json_quoted_in_prose_never_runs_and_the_model_is_asked_once(alpha, soporte):
    """R5 (found by exploratory testing): JSON of a write call inside prose may be a quotation (of
    the customer, of an example): it never runs from there. The model is told once that it was not
    run; its next answer is the reply, with no tool called and no JSON in it."""
    _desk, log = soporte
    quoted = ('Un integrador enviaría algo como {"name": "soporte__abrir_caso_soporte", "arguments": {"documento": '
              '"1020304050", "tipo": "falla", "descripcion": "ejemplo"}} pero no lo haré sin su confirmación.')
    model, served = serve_model([say(quoted), say("Puedo abrir el caso si me confirma sus datos.")])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "¿Cómo se abre un caso por API?"))
    assert tool_calls_seen(log) == []
    assert model.requests[1]["messages"][-1] == {"role": "user", "content": TEXT_CALLS_NOT_RUN}
    assert turn.reply.text == "Puedo abrir el caso si me confirma sus datos." and len(model.requests) == 2


def test_a_call_announced_in_prose_runs_once_the_model_calls_it(alpha, soporte):
    """R5 (found by exploratory testing): "Voy a revisar: {json} y le cuento." used to reach the
    customer as "Voy a revisar: y le cuento." with nothing behind it. Now the model is told the call
    was not run, calls the tool, and the customer gets the answer built on its result."""
    _desk, log = soporte
    announced = 'Voy a revisar: {"name": "soporte__consultar_caso", "arguments": {"radicado": "SOP-1"}} y le cuento.'
    model, served = serve_model([say(announced), call("soporte__consultar_caso", {"radicado": "SOP-1"}),
                                 say("No existe."), say("No encontré ese caso.")])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "¿Cómo va el caso SOP-1?"))
    assert [seen[:2] for seen in tool_calls_seen(log)] == [("consultar_caso", {"radicado": "SOP-1"})]
    assert "NOT_FOUND" in model.requests[2]["messages"][-1]["content"]
    assert turn.reply.text == "No encontré ese caso."


def test_calls_past_the_cap_are_not_run_and_the_model_is_told(alpha, soporte):
    """R2 (found by exploratory testing): of an answer with more calls than MAX_CALLS_PER_ANSWER, the
    first ones run and the model is told how many did not, instead of never hearing of them."""
    _desk, log = soporte
    asked = [("soporte__consultar_caso", {"radicado": f"SOP-{n}"}) for n in range(MAX_CALLS_PER_ANSWER + 3)]
    model, served = serve_model([calls(*asked), say("Listo."), say("Revisé los casos.")])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "¿Cómo van mis casos?"))
    assert len(tool_calls_seen(log)) == MAX_CALLS_PER_ANSWER
    told = model.requests[1]["messages"][-1]
    assert told == {"role": "user", "content": calls_not_run(3)} and "3 more" in told["content"]
    assert turn.reply.text == "Revisé los casos."


def test_it_tells_the_model_about_arguments_that_are_not_json(alpha, soporte):
    """R2, A4: native arguments that are not a JSON object never reach the server; the model is
    told to correct them and its corrected call goes through."""
    _desk, log = soporte
    model, served = serve_model([
        call(SEARCH, '{"consulta": "router"'), call(SEARCH, {"consulta": "router"}), say("ok"), say("Hay routers."),
    ])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "¿Routers?"))
    assert len(tool_calls_seen(log)) == 1 and turn.reply.text == "Hay routers."
    with translation.override("es"):
        told = model.requests[1]["messages"][-1]["content"]
    assert SEARCH in told and "JSON" in told


@pytest.mark.parametrize("arguments", [{"consulta": "rou\u0000ter"}, '{"consulta": "rou\\ud800ter"}'])
def test_arguments_with_a_nul_or_a_lone_surrogate_are_refused_to_the_model_not_a_failed_turn(alpha, soporte, arguments):
    """Issue 19 (low), A4: a NUL (or an unpaired surrogate) in a model's tool arguments failed the
    turn as `internal` at the database; now those arguments never reach the server, the model is
    told to correct them, its corrected call goes through, and the turn finishes."""
    _desk, log = soporte
    model, served = serve_model([call(SEARCH, arguments), call(SEARCH, {"consulta": "router"}), say("ok"), say("Hay routers.")])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "¿Routers?"))
    assert turn.status == Turn.Status.DONE and turn.reply.text == "Hay routers.", turn.error_detail
    assert [args for _name, args, _key in tool_calls_seen(log)] == [{"consulta": "router"}]
    with alpha.schema():
        outcomes = list(TurnStep.objects.filter(turn=turn, kind="tool").order_by("index").values_list("outcome", flat=True))
    assert outcomes[0] == "invalid_arguments"


def test_a_nul_in_the_models_words_is_kept_as_a_replacement_character(alpha, soporte):
    """Issue 19 (low), A4: a reply with a NUL is stored and delivered with U+FFFD in its place."""
    model, served = serve_model([say("Hola\u0000 Ana"), say("Hola\u0000 Ana")])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "Hola"))
    assert turn.status == Turn.Status.DONE and turn.reply.text == "Hola\ufffd Ana"


def test_it_stops_a_model_that_repeats_the_same_call(alpha, soporte):
    """R2: the same tool with the same arguments is executed once in a turn; the model is told it
    repeated itself; a model that keeps repeating is stopped (long before the iteration limit)
    and the customer gets an honest reply, not silence and not call syntax."""
    _desk, log = soporte
    model, served = serve_model([call(SEARCH, {"consulta": "router"})])  # forever, even when asked for the reply
    with served as url, agent(alpha, f"{url}/v1", iteration_limit=10):
        turn = run(alpha, post(alpha, "¿Routers?"))
    assert len(tool_calls_seen(log)) == 1
    repeated = model.requests[2]["messages"][-1]["content"]
    assert SEARCH in repeated and model.requests[2]["messages"][-1]["role"] == "tool"
    assert len(model.requests) == 4  # call, repeat, repeat → stop; then the clean reply request
    assert turn.reply.text == no_answer_reply("es")
    assert turn.status == Turn.Status.DONE and turn.error_code == "no_answer"
    assert "<tool_call>" not in turn.reply.text and "soporte__" not in turn.reply.text


def test_it_stops_at_the_tenants_iteration_limit(alpha, soporte):
    """R2, T6: a model that asks for a new call every time is stopped at the tenant's iteration
    limit; the reply request says the search is unfinished and gets the facts found so far."""
    _desk, log = soporte
    model, served = serve_model([call(SEARCH, {"consulta": "router"}), call(SEARCH, {"consulta": "módem"}),
                                 say("Encontré routers y módems.")])
    with served as url, agent(alpha, f"{url}/v1", iteration_limit=2):
        turn = run(alpha, post(alpha, "Quiero de todo"))
    assert [c[1]["consulta"] for c in tool_calls_seen(log)] == ["router", "módem"]
    assert len(model.requests) == 3 and "tools" not in model.requests[2]
    clean = model.requests[2]["messages"][1]["content"]
    assert "Router WiFi 6" in clean and "Módem de fibra" in clean
    assert turn.reply.text == "Encontré routers y módems." and turn.iterations == 2


def test_a_repeat_is_recognised_in_any_key_order_and_the_repeat_count_resets(alpha, soporte):
    """R2, issue 19 (two surviving mutants): the same arguments in another key order are the same
    call, run once; a new call between two repeats starts the count again, so a model that
    repeated once, moved on and repeated once more is not stopped."""
    _desk, log = soporte
    first = '{"consulta": "router", "solo_disponibles": true}'
    reordered = '{"solo_disponibles": true, "consulta": "router"}'
    model, served = serve_model([call(SEARCH, first), call(SEARCH, reordered), call(SEARCH, {"consulta": "modem"}),
                                 call(SEARCH, first), say("ok"), say("Hay routers y modems.")])
    with served as url, agent(alpha, f"{url}/v1", iteration_limit=10):
        turn = run(alpha, post(alpha, "¿Routers o modems?"))
    assert [args for _name, args, _key in tool_calls_seen(log)] == [{"consulta": "router", "solo_disponibles": True},
                                                                    {"consulta": "modem"}]
    assert turn.reply.text == "Hay routers y modems." and turn.error_code == ""


def test_it_runs_several_calls_of_one_answer(alpha, soporte):
    """R2: several native calls in one answer each run, in order, each with its own step key."""
    _desk, log = soporte
    model, served = serve_model([
        calls((SEARCH, {"consulta": "router"}), (SEARCH, {"consulta": "cable"})), say("ok"), say("Ambos disponibles."),
    ])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "¿Router y cable?"))
    seen = tool_calls_seen(log)
    assert [(c[1]["consulta"], c[2]) for c in seen] == [
        ("router", f"turn:{turn.pk}:step:2"), ("cable", f"turn:{turn.pk}:step:3")]
    tool_messages = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == [c["id"] for c in model.requests[1]["messages"][-3]["tool_calls"]]


def test_it_offers_only_tools_the_channel_may_use(alpha, soporte):
    """M7, R2: with voice limited to read tools, a voice turn is not offered the case-opening tool."""
    model, served = serve_model([say("Hola")])
    policy = {"chat": ["read", "write", "destructive"], "voice": ["read"]}
    with served as url, agent(alpha, f"{url}/v1", exposure_policy=policy):
        run(alpha, post(alpha, "Hola", channel_kind="voice"))
    assert model.tool_names(0) == ["soporte__consultar_caso", "soporte__buscar_producto"]


def test_it_keeps_the_conversation_for_the_next_turn(alpha, soporte):
    """R3: the next turn sees the earlier messages, the agent's reply included."""
    model, served = serve_model([say("Hola, soy el asistente."), say("Dijiste hola.")])
    with served as url, agent(alpha, f"{url}/v1"):
        first = run(alpha, post(alpha, "Hola"))
        second = run(alpha, post(alpha, "¿Qué dije?", conversation=first.conversation))
    assert [m["content"] for m in model.requests[1]["messages"][1:]] == ["Hola", "Hola, soy el asistente.", "¿Qué dije?"]
    with alpha.schema():
        assert list(Message.objects.filter(conversation=first.conversation).values_list("role", flat=True)) == [
            "customer", "agent", "customer", "agent"]
    assert second.reply.text == "Dijiste hola."


def test_status_texts_come_from_the_tools_verb():
    """R9: "consultar un caso de soporte" → "Consultando el caso de soporte…"; English verbs too;
    a verb in another language than the conversation's gives a general, translated status."""
    assert status_text(verb="consultar un caso de soporte", verb_language="es", language="es") == "Consultando el caso de soporte…"
    assert status_text(verb="abrir un caso de soporte", verb_language="es", language="es-CO") == "Abriendo el caso de soporte…"
    assert status_text(verb="leer una factura", verb_language="es", language="es") == "Leyendo la factura…"
    assert status_text(verb="pedir una cita", verb_language="es", language="es") == "Pidiendo la cita…"
    assert status_text(verb="registrarse en el portal", verb_language="es", language="es") == "Registrándose en el portal…"
    assert status_text(verb="search a product", verb_language="en", language="en") == "Searching the product…"
    assert status_text(verb="schedule a visit", verb_language="en", language="en") == "Scheduling the visit…"
    assert status_text(verb="stop the order", verb_language="en", language="en") == "Stopping the order…"
    with translation.override("en"):
        general = status_text(verb="", verb_language="es", language="en")
    assert general == status_text(verb="consultar un caso", verb_language="es", language="en") == "Checking our systems…"


def test_what_a_model_writes_is_bounded(alpha, soporte):
    """R2, A4: twenty calls in one answer run at most eight; arguments longer than 20,000
    characters are refused before the gateway; a reply of a million characters is cut."""
    _desk, log = soporte
    many = calls(*[(SEARCH, {"consulta": f"producto {n}"}) for n in range(20)])
    huge = call(SEARCH, '{"consulta": "' + "x" * 30_000 + '"}')
    model, served = serve_model([many, huge, say("ok"), say("palabra " * 125_000)])
    with served as url, agent(alpha, f"{url}/v1"):
        turn = run(alpha, post(alpha, "Todo"))
    assert len(tool_calls_seen(log)) == 8
    assert "JSON" in model.requests[2]["messages"][-1]["content"]
    assert len(turn.reply.text) <= 8001 and turn.reply.text.endswith("palabra…")
