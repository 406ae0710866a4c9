"""The cheap check's signals on the support desk's own 15-tool catalog (datasets/, R6): Spanish
product requests and their follow-ups, the calibrated gate, Snowball stems in both languages and
the values of a tool's enums. No database, no model call."""

import json
import re
from pathlib import Path

from runtime.routing.candidates import ToolCard, catalog_index, lexical
from runtime.routing.gate import check
from runtime.routing.lexicon import expand
from runtime.routing.phrasings import kinds_asked
from runtime.routing.words import normalise, stems

CATALOG = Path(__file__).resolve().parents[2] / "datasets" / "asixto_soporte_catalog.json"
CARDS = [ToolCard.from_definition(d) for d in json.loads(CATALOG.read_text())]


def conversation(*texts):
    """Alternating messages ending with the customer's."""
    n = len(texts)
    return [{"role": "user" if (n - 1 - i) % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]


def route(*texts):
    return check(catalog_index(CARDS), conversation(*texts))


def test_a_follow_up_after_a_spanish_product_request_searches_the_catalog():
    """R6: "¿y algo parecido?" after asking for a product by its Spanish name is a product search,
    even though the words of the follow-up alone point nowhere."""
    result = route("¿Tienen el adaptador de red por la corriente?", "Ese producto está agotado.", "¿y algo parecido?")
    assert result.needs_tool and result.best == "buscar_producto"


def test_spanish_inflections_meet_the_tools_words():
    """R6: "megas me quedan en el celular" is about consumption (datos, minutos), not the bill."""
    assert route("cuántos megas me quedan en el celular").best == "consultar_consumo"
    assert stems("cámaras") == stems("cámara") and stems("devoluciones") == stems("devolución")
    assert stems("tickets")[0] & stems("ticket")[0]  # the English stem meets where the Spanish one does not


def test_the_values_of_a_tools_enums_count_as_its_words():
    """R6: a customer naming a value of an input's enum ("Theater") points at that tool; values that
    say nothing ("dontcare", "True") are left out."""
    find = ToolCard.from_definition({"name": "Events_3_FindEvents", "title": "Find events", "description": "Finds events.",
                                     "inputSchema": {"type": "object", "properties": {
                                         "event_type": {"type": "string", "enum": ["Music", "Theater", "dontcare"]}}}})
    other = ToolCard.from_definition({"name": "Movies_1_FindMovies", "title": "Find movies", "description": "Finds movies.",
                                      "inputSchema": {"type": "object", "properties": {
                                          "free": {"type": "string", "enum": ["True", "False"]}}}})
    assert find.enum_words() == "Music Theater" and other.enum_words() == ""
    scores = lexical(catalog_index([find, other]), stems("any theater shows this weekend?"))
    assert scores[0] > 0 and scores[1] == 0


def test_a_request_of_a_kind_no_tool_does_needs_no_tool():
    """R6: working something out ("calculate the area…") is no tool's kind of action in a catalog of
    searches and bookings: no tool, even though "area" is a word of a tool (find homes by area)."""
    bfcl = [ToolCard.from_definition(d) for d in json.loads((CATALOG.parent / "bfcl_sgd_catalog.json").read_text())]
    result = check(catalog_index(bfcl), conversation("Calculate the area of a circle with radius 4"))
    assert not result.needs_tool


def test_a_kind_no_tool_does_counts_only_where_every_tools_verb_has_a_known_kind():
    """R6: "calculate…" asks for a kind no tool of the support desk does; beside a tool whose verb is
    of no known kind ("tabulate…"), that tool might be the one, so the message is not foreign there."""
    from runtime.routing.gate import read

    tabulate = ToolCard.from_definition({"name": "tabulate", "title": "Tabulate", "description": "Tabulates figures.",
                                         "_meta": {"com.asixto/verb": "tabulate the figures of a table"}})
    (desk,) = read(catalog_index(CARDS), ["Calculate the square root of 81"])
    (mixed,) = read(catalog_index([*CARDS, tabulate]), ["Calculate the square root of 81"])
    assert desk.foreign and not mixed.foreign


def test_a_tool_one_strong_signal_prefers_gets_a_candidate_slot():
    """R6: the first candidate is the best score; the other two slots are fused from the rankings of
    single signals too, so a tool the words and e5's views rank high is a candidate even where the
    added score puts it fourth or lower (a ride asked in words the bus and home tools share)."""
    from runtime.routing.gate import read

    bfcl = catalog_index([ToolCard.from_definition(d) for d in json.loads((CATALOG.parent / "bfcl_sgd_catalog.json").read_text())])
    text = "Find me a ride to 22 Pine Street, luxury please."
    result = check(bfcl, conversation(text))
    (reading,) = read(bfcl, [text])
    names = [name for name, _score in result.candidates]
    assert "RideSharing_2_GetRide" in names
    assert names[0] == bfcl.cards[int(reading.scores.argmax())].name
    assert [s for _n, s in result.candidates] == sorted((s for _n, s in result.candidates), reverse=True)


def test_a_yes_to_the_agents_offer_takes_the_offered_action_not_the_topic_of_the_reply():
    """R6: "sí, …" answers the agent's question: the action it offers ("¿te agendo la instalación?")
    is the subject, not what the rest of the reply was about (coverage); "bueno, dale" or a
    transcript's "aja sí mándalo" agree too, and a bare "¿Lo hago?" offers what the reply says."""
    booked = route("¿Llega la fibra a Robledo?", "Sí, en Robledo hay fibra. ¿Te agendo la instalación?",
                   "sí, el viernes temprano")
    assert booked.needs_tool and booked.follow_up and booked.best == "agendar_visita_tecnica"
    link = route("cuánto tengo pendiente", "Tienes $ 64.000 pendientes. ¿Te envío el enlace de pago?", "aja sí mándamelo")
    assert link.needs_tool and link.best == "generar_enlace_pago"
    plan = route("Se me acaban los datos muy rápido",
                 "Puedo cambiarte al plan de 30 GB por $ 10.000 más al mes. ¿Lo hago?", "bueno, dale")
    assert plan.needs_tool and plan.best == "cambiar_plan"


def test_a_no_to_the_agents_offer_asks_nothing_unless_it_redirects():
    """R6: "no, gracias, …" declines the offer: no tool, even when it names what the offer was
    about ("lo pago en el supermercado"); "no, mejor …" asks for something else, routed by its own words."""
    offer = "Tu saldo es de $ 50.000. ¿Te mando el enlace de pago?"
    declined = route("¿Debo algo?", offer, "no gracias, yo lo pago en el supermercado")
    assert not declined.needs_tool
    assert not route("La señal del celular se va a ratos", "¿Quieres que abra un caso de soporte?",
                     "no, todavía no, déjame ver si se arregla").needs_tool
    redirected = route("¿Debo algo?", offer, "no, mejor pásame con un asesor")
    assert redirected.needs_tool and redirected.best == "transferir_asesor"


def test_notices_thanks_general_questions_and_questions_about_the_chat_need_no_tool():
    """R6: a message that names a service but asks for nothing the tools do — a notice ("ya les
    pagué…, solo les aviso"), thanks after a service, a question of general knowledge or opinion, a
    question about the conversation — needs no tool; asking about one's own bill still does."""
    for text in ("Ya les pagué la cuota por transferencia, solo les aviso",
                 "Gracias, el técnico dejó el decodificador funcionando perfecto",
                 "¿Para qué sirve el puerto USB que tiene el módem?",
                 "¿Me repites el correo que dijiste?"):
        assert not route(text).needs_tool, text
    assert route("¿Cuánto debo de la factura de este mes?").best == "consultar_factura"


def test_an_email_address_answering_the_agent_continues_the_request():
    """R6: an e-mail address alone, after the agent asked for it, is the data of the previous request
    (like a document number), though it has no digit."""
    result = route("Necesito actualizar mi correo de contacto", "Claro, ¿cuál es el correo nuevo?", "luis.gomez@mail.co")
    assert result.needs_tool and result.follow_up and result.best == "actualizar_datos_contacto"


def test_the_thing_a_message_names_weighs_as_much_as_the_tools_action_word():
    """R6: customers name one action in many words ("cambié", "actualizar", "modificar"): the action word
    of a tool's verb ("cambiar el plan contratado") weighs no more than its description's words, so "cambié
    mi correo" overlaps the contact details' tool ("correo") more than the plan change ("cambiar")."""
    index = catalog_index(CARDS)
    names = [card.name for card in index.cards]
    scores = lexical(index, stems("cambié mi correo"))
    assert scores[names.index("actualizar_datos_contacto")] > scores[names.index("cambiar_plan")] > 0


def test_asking_how_much_or_by_when_to_pay_asks_what_the_bill_says():
    """R6: "¿cuánto tengo que pagar?" and "¿hasta qué día tengo para pagar?" ask for the bill, not to
    pay it (the payment link); "quiero pagar la factura" still pays."""
    for text in ("¿hasta qué día tengo para pagar la factura?", "bueno quería saber hasta cuándo tengo plazo para pagar",
                 "how much do I have to pay this month?"):
        assert kinds_asked(normalise(text)) & {"status", "pay"} == {"status"}, text
        result = route(text)
        assert result.needs_tool and result.best == "consultar_factura", text
    assert "pay" in kinds_asked(normalise("Quiero pagar la factura"))
    assert route("Quiero pagar la factura").best == "generar_enlace_pago"


def test_asking_for_someone_to_help_is_a_handover_and_devuelvo_a_return():
    """R6: "necesito que alguien me atienda" asks for a person (the handover), not a store; "¿cómo lo
    devuelvo?" sounds like a return in its conjugated form too."""
    result = route("necesito que alguien me atienda ya")
    assert result.needs_tool and result.best == "transferir_asesor"
    assert "return" in kinds_asked(normalise("ya no lo quiero, ¿cómo lo devuelvo?"))
    assert "handover" not in kinds_asked(normalise("¿alguien sabe si llueve hoy?"))


def test_no_cue_leaves_a_gap_unbounded_on_the_customers_text():
    """R6, security: the cues run on a customer's text (up to 4,000 characters): a gap written `.*` or `.+`
    made "me llegó " × 3,000 cost seconds (quadratic backtracking); every gap is bounded."""
    from runtime.routing import action, grammar, phrasings

    patterns = [*phrasings._CUE_PATTERNS.values(), phrasings._ABOUT_PAYING, phrasings._DONE_BEFORE,
                *(value for module in (grammar, action) for value in vars(module).values() if isinstance(value, re.Pattern))]
    assert len(patterns) > 20
    for pattern in patterns:
        outside_classes = re.sub(r"\[[^\]]*\]", "", pattern.pattern)
        assert not re.search(r"(?<!\\)\.[*+]", outside_classes), pattern.pattern


def test_a_yes_with_details_takes_the_offer_and_a_whether_question_is_routed_by_its_words():
    """R6: "Sí, el martes por la tarde, estoy en la Carrera 70" to "¿Quieres que agende una visita técnica?"
    agrees (it only adds the details); "si ya me llegó la factura" to "¿qué te gustaría revisar?" is no yes
    to an offer but a request of its own ("whether…", the same letters)."""
    visit = route("La fibra se cae cada rato", "Registré el caso SOP-881. ¿Quieres que agende una visita técnica?",
                  "Sí, el martes por la tarde, estoy en la Carrera 70 # 10-20")
    assert visit.needs_tool and visit.follow_up and visit.best == "agendar_visita_tecnica"
    bill = route("Quiero revisar algo de mi cuenta", "Claro, ¿qué te gustaría revisar?", "si ya me llegó la factura de este mes")
    assert bill.needs_tool and bill.best == "consultar_factura"


def test_holding_on_a_question_about_the_chat_or_a_general_claim_need_no_tool():
    """R6: "espéreme que estoy buscando el recibo" (holding on), "¿en qué idiomas me puedes atender?" (about
    the chat) and "¿eso es cierto?" of a claim heard somewhere (general knowledge) ask no tool."""
    for text in ("espéreme un momentico que estoy buscando el recibo", "¿En qué idiomas me puedes atender?",
                 "Dicen que desconectar el módem en la noche ahorra luz, ¿eso es cierto?"):
        assert not route(text).needs_tool, text


def test_the_request_probe_hears_a_request_in_either_language_whatever_the_catalog():
    """R6: the request probe (a linear read of the message's USE vector, fitted on the dev files' stand-alone
    messages) gives positive log-odds to requests and negative ones to thanks, opinions, how-to questions and
    notices, in Spanish and English, with no catalog at all; both gates weigh it."""
    from runtime.routing import encoder
    from runtime.routing.gate import sounds_like_request

    asks = ["necesito que me revisen por qué me llegó tan alto el recibo", "can you tell me where my package is",
            "quiero que me agenden una visita para el viernes"]
    nothing = ["mil gracias, muy amables", "la verdad el servicio de ustedes es carísimo",
               "how do I turn on my laptop's bluetooth", "solo para avisar que ya hice la consignación"]
    vectors = encoder.embed([normalise(text) for text in asks + nothing])
    said = [sounds_like_request(v) for v in vectors]
    assert all(value > 0 for value in said[:len(asks)]), list(zip(asks, said))
    assert all(value < 0 for value in said[len(asks):]), list(zip(nothing, said[len(asks):]))


def test_a_message_read_with_e5_is_heard_by_the_request_probe_over_both_encoders():
    """R6, issue 18: when the cascade reads e5 for a message, the request probe reads its USE and e5 vectors side by
    side (`request_probe_full.json`, fitted by datasets/fit_gate.py; the full gate weighs it), and still gives positive
    log-odds to requests and negative ones to thanks, opinions, how-to questions and notices in either language. A
    message the cheap signals settle keeps the USE probe's value; with no full probe fitted, USE alone is read."""
    from runtime.routing import encoder, gate

    asks = ["necesito que me revisen por qué me llegó tan alto el recibo", "can you tell me where my package is",
            "quiero que me agenden una visita para el viernes"]
    nothing = ["mil gracias, muy amables", "la verdad el servicio de ustedes es carísimo",
               "how do I turn on my laptop's bluetooth", "solo para avisar que ya hice la consignación"]
    plain = [normalise(text) for text in asks + nothing]
    use, e5 = encoder.embed(plain), encoder.embed_e5(plain, query=True)
    heard = [gate.sounds_like_request(u, v) for u, v in zip(use, e5)]
    assert all(value > 0 for value in heard[:len(asks)]), list(zip(asks, heard))
    assert all(value < 0 for value in heard[len(asks):]), list(zip(nothing, heard[len(asks):]))
    alone = [gate.sounds_like_request(u) for u in use]
    assert heard != alone  # e5 is read, not only USE

    index = catalog_index(CARDS)
    full = gate.read(index, asks + nothing, cascade=False)
    assert [round(r.request, 4) for r in full] == [round(v, 4) for v in heard]
    (settled,) = gate.read(index, ["gracias"])  # small talk: the cheap signals decide, e5 is not read
    assert not settled.full and settled.request == gate.sounds_like_request(encoder.embed([settled.plain])[0])


def test_with_no_request_probe_over_both_encoders_a_full_reading_hears_use_alone(monkeypatch, tmp_path):
    """R6, issue 18: a deployment without `request_probe_full.json` reads the USE probe for every message."""
    from runtime.routing import encoder, gate

    monkeypatch.setattr(gate, "REQUEST_PROBE_FULL", tmp_path / "not_fitted.json")
    (reading,) = gate.read(catalog_index(CARDS), ["can you tell me where my package is"], cascade=False)
    assert reading.full and reading.request == gate.sounds_like_request(encoder.embed([reading.plain])[0])


def test_the_lexicon_translates_actions_not_a_business_s_things():
    """R6 (issue 18): the words of one business's things ("ticket" = "caso", "link" = "enlace") are off (a
    leave-one-domain-out run decides, datasets/README.md); the actions a request names still meet their
    translation ("cancel" = "cancelar"), whatever the business."""
    assert expand(stems("ticket link recibo")) == stems("ticket link recibo")
    assert stems("cancelar")[0] <= expand(stems("cancel"))[0]


def test_something_done_before_is_asked_about_whatever_it_was():
    """R6 (issue 18): a past action of the customer's own ("hice una transferencia ayer…", "I placed an order…",
    "solicité el reembolso…") is asked about (status), not done again, with no word of any business in the rule."""
    for text in ("hice una transferencia ayer y todavía no le llega", "I placed an order last week and nothing came",
                 "solicité el reembolso hace tres semanas y nada"):
        assert kinds_asked(normalise(text)) == {"status"}, text
    assert "pay" in kinds_asked(normalise("quiero hacer una transferencia"))
