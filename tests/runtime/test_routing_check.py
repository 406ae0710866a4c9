"""The cheap check and the pure parts of routing, without a database (R6, R7, R8): the gate and
its candidates on the example support catalog, the per-catalog index, speech fillers, the
router's facts, the composed instruction, the customer's language, the delivery judgement,
and the routing_eval command."""

import json

import pytest
from django.core.management import CommandError, call_command

from examples.soporte.definitions import ABRIR_CASO_SOPORTE, BUSCAR_PRODUCTO, CONSULTAR_CASO
from runtime.routing.candidates import ToolCard, catalog_index
from runtime.routing.compose import compose_instruction
from runtime.routing.delivery import delivered, pretence, reask
from runtime.routing.gate import check
from runtime.routing.language import customer_language
from runtime.routing.router import Facts, parse_facts, router_messages
from runtime.routing.words import normalise, terms

SEARCH, OPEN_CASE, CASE = "soporte__buscar_producto", "soporte__abrir_caso_soporte", "soporte__consultar_caso"
CARDS = [ToolCard.from_definition(d, name=f"soporte__{d['name']}") for d in (ABRIR_CASO_SOPORTE, CONSULTAR_CASO, BUSCAR_PRODUCTO)]


def conversation(*texts):
    """Alternating messages ending with the customer's."""
    n = len(texts)
    return [{"role": "user" if (n - 1 - i) % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]


def route(*texts):
    return check(catalog_index(CARDS), conversation(*texts))


@pytest.mark.parametrize("text", ["Hola, buenas tardes", "Muchas gracias", "ok", "aló sí buenas", "Thanks, that's all",
                                  "¿Cuál es la capital de Francia?", "¿Eres un robot?"])
def test_it_lets_ordinary_messages_through_without_a_tool(text):
    """R6: greetings, thanks, small talk and questions no tool answers need no tool: no router call."""
    assert not route(text).needs_tool


@pytest.mark.parametrize("text, tool", [
    ("¿Tienen routers disponibles?", SEARCH),
    ("Do you sell routers?", SEARCH),
    ("¿Cómo va el caso SOP-1?", CASE),
    ("hola quería saber cómo va mi caso el radicado es SOP-3", CASE),
    ("No tengo internet desde ayer, quiero poner un reclamo", OPEN_CASE),
])
def test_it_finds_the_tool_a_request_needs_in_chat_and_voice(text, tool):
    """R6: Spanish and English, chat text and voice transcripts: the request needs a tool, and the
    right one is the first candidate (the rest follow, best first, at most three)."""
    result = route(text)
    assert result.needs_tool and result.best == tool
    assert len(result.candidates) == 3 and [s for _n, s in result.candidates] == sorted((s for _n, s in result.candidates), reverse=True)


def test_a_yes_routes_to_what_the_agent_offered_and_a_no_thanks_to_nothing():
    """R6: "sí, por favor" after the agent offered to open a case is a request to open it (the case
    tools are the candidates); "no gracias" after an answer is small talk."""
    result = route("Se me cayó el internet", "Lamento eso. ¿Quieres que abra un caso de soporte?", "sí, por favor")
    assert result.needs_tool and OPEN_CASE in [name for name, _s in result.candidates[:2]]
    assert not route("Hay 2 routers. ¿Algo más?", "no gracias").needs_tool


def test_the_index_is_built_once_per_catalog_version():
    """R6: tool embeddings are computed per catalog version (names + definition hashes), not per message."""
    assert catalog_index(CARDS) is catalog_index(list(CARDS))
    changed = {**BUSCAR_PRODUCTO, "description": BUSCAR_PRODUCTO["description"] + " Incluye accesorios."}
    other = CARDS[:2] + [ToolCard.from_definition(changed, name=SEARCH)]
    assert catalog_index(other) is not catalog_index(CARDS)


def test_voice_fillers_and_accents_are_folded():
    """R6: a transcript and a typed message look alike to the check."""
    assert normalise("Eh, este... ¿cuánto VALE el módem?") == normalise("cuanto vale el modem")
    assert terms("routers de fibra") == terms("router fibras")


def test_router_facts_are_validated_against_the_schema_and_the_candidates():
    """R6: valid facts come back; anything invalid or unclear gives None (the turn goes unrouted)."""
    good = {"tool": SEARCH, "request": "routers rojos", "quantity": 2, "references": "el router de antes",
            "details": {"consulta": "router rojo"}, "clear": True}
    facts = parse_facts("```json\n" + json.dumps(good) + "\n```", CARDS)
    assert facts == Facts(tool=SEARCH, request="routers rojos", quantity=2, references="el router de antes",
                          details={"consulta": "router rojo"})
    for bad in ["no sé", "{not json}", json.dumps({**good, "clear": False}), json.dumps({**good, "tool": "none"}),
                json.dumps({**good, "tool": "soporte__borrar_todo"}), json.dumps({**good, "quantity": "dos"}),
                json.dumps({"tool": SEARCH, "clear": True}), json.dumps([good])]:
        assert parse_facts(bad, CARDS) is None, bad


def test_the_router_sees_only_the_conversation_and_the_candidates():
    """R6: the router request holds the conversation and each candidate's name and verb, nothing else."""
    messages = router_messages(conversation=conversation("¿Tienen routers?", "Sí.", "¿y en rojo?"), candidates=CARDS[2:])
    text = json.dumps(messages, ensure_ascii=False)
    assert "buscar un producto del catálogo" in text and "Customer (last message): ¿y en rojo?" in text
    assert CASE not in text


def test_the_instruction_is_written_from_the_verb_the_schema_and_the_facts():
    """R6: the platform writes the instruction in the tool's own wording; the customer's values are
    offered only where they fit the tool's inputSchema."""
    facts = Facts(tool=SEARCH, request="routers rojos", quantity=3, references="el router WiFi 6",
                  details={"consulta": "router rojo", "solo_disponibles": "quizá", "precio": 5})
    text = compose_instruction(card=CARDS[2], facts=facts)
    assert '"buscar un producto del catálogo"' in text and f"`{SEARCH}`" in text
    assert "routers rojos" in text and "How many: 3" in text and "el router WiFi 6" in text
    assert "consulta (required)" in text and "solo_disponibles (optional)" in text
    assert '{"consulta": "router rojo"}' in text  # "quizá" is no boolean, "precio" is no input


def test_the_customers_language_is_detected_and_short_messages_keep_the_default():
    """R7: the reply language follows what the customer writes; a bare "ok" says nothing."""
    assert customer_language(message="¿Tienen routers disponibles en color rojo?", earlier=[], default="en") == "es"
    assert customer_language(message="Do you have any routers in red?", earlier=[], default="es") == "en"
    assert customer_language(message="ok", earlier=[], default="es") == "es"
    assert customer_language(message="sí dale", earlier=["Quiero saber cómo va mi caso de soporte"], default="en") == "es"


def test_delivery_is_judged_by_what_came_back():
    """R8: a call of the routed tool delivers, whatever it answered (a business error and a failure
    are for the model to tell: asking again would call it again); a call of another tool, or one
    whose arguments were refused before anything was sent, does not; result-like prose is recognised."""
    assert delivered(tool_outcomes=[(SEARCH, "ok")], routed=SEARCH)
    assert delivered(tool_outcomes=[(SEARCH, "business_error")], routed=SEARCH)
    assert delivered(tool_outcomes=[(SEARCH, "timeout"), (CASE, "ok")], routed=SEARCH)
    assert not delivered(tool_outcomes=[(CASE, "ok")], routed=SEARCH)
    assert not delivered(tool_outcomes=[(SEARCH, "invalid_arguments")], routed=SEARCH)
    assert pretence("Estos son los resultados:\n```\n```") == "empty block"
    assert pretence("Busqué en el catálogo y hay varios modelos.") == "search claimed"
    assert pretence("¿Me dices qué color prefieres?") == ""
    text = reask(verb="buscar un producto del catálogo", name=SEARCH)
    assert "buscar un producto del catálogo" in text and SEARCH in text and "say so plainly" in text


def test_routing_eval_reports_gate_and_candidates(tmp_path, capsys):
    """R6: `routing_eval DATASET --catalog CATALOG --json` prints gate accuracy, top-1, recall@3 and n."""
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps([{**d, "name": f"soporte__{d['name']}"} for d in (ABRIR_CASO_SOPORTE, CONSULTAR_CASO, BUSCAR_PRODUCTO)]))
    dataset = tmp_path / "set.jsonl"
    dataset.write_text("\n".join(json.dumps(item) for item in [
        {"id": "a", "messages": [{"role": "user", "content": "¿Tienen routers disponibles?"}], "expected": SEARCH, "lang": "es", "style": "chat"},
        {"id": "b", "messages": [{"role": "user", "content": "muchas gracias"}], "expected": None, "lang": "es", "style": "voice"},
    ]))
    call_command("routing_eval", str(dataset), "--catalog", str(catalog), "--json")
    report = json.loads(capsys.readouterr().out)
    assert (report["n"], report["gate_accuracy"], report["top1"], report["recall_at_3"]) == (2, 1.0, 1.0, 1.0)
    assert report["confusion"] == {"tool": {"tool": 1, "none": 0}, "none": {"tool": 0, "none": 1}}
    assert set(report["by_style"]) == {"chat", "voice"}
    dataset.write_text('{"id": "x", "messages": [], "expected": null}\n')
    with pytest.raises(CommandError, match="line 1"):
        call_command("routing_eval", str(dataset), "--catalog", str(catalog))
    dataset.write_text(json.dumps({"messages": [{"role": "user", "content": "hola"}], "expected": "no_such_tool"}))
    with pytest.raises(CommandError, match="not in the catalog"):
        call_command("routing_eval", str(dataset), "--catalog", str(catalog))
