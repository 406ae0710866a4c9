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


def test_a_spanish_product_name_is_a_product_search_not_a_store_or_a_plan():
    """R6: "¿Tienen routers?" names a thing, not a place: the catalog search, not the store finder
    (its verb finds a place) nor the plan change (routers sound like internet plans)."""
    result = route("¿Tienen routers?")
    assert result.needs_tool and result.best == "buscar_producto"
    assert route("hay oficinas en medellín").best == "buscar_tienda"
    followed = route("Muéstrame cámaras WiFi", "Tenemos la Cámara de seguridad WiFi para interiores a $ 179.900.", "¿y en rojo?")
    assert followed.needs_tool and followed.follow_up and followed.best == "buscar_producto"


def test_a_follow_up_after_a_spanish_product_request_searches_the_catalog():
    """R6: "¿y algo parecido?" after asking for a product by its Spanish name is a product search,
    even though the words of the follow-up alone point nowhere."""
    result = route("¿Tienen el adaptador de red por la corriente?", "Ese producto está agotado.", "¿y algo parecido?")
    assert result.needs_tool and result.best == "buscar_producto"


def test_a_spoken_fault_report_needs_a_tool_and_general_questions_do_not():
    """R6: the calibrated gate: a voice transcript reporting a fault asks for a case; a question
    about the world, a language or thanks with more words than "gracias" asks for nothing."""
    result = route("o sea el internet se cae a cada rato")
    assert result.needs_tool and result.best == "abrir_caso_soporte"
    for text in ("¿Qué hora es en Japón?", "¿Hablas inglés?", "Listo, muchas gracias por la ayuda"):
        assert not route(text).needs_tool, text


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


def test_the_kind_of_action_asked_tells_asking_about_a_case_from_opening_one():
    """R6: the verb cues: "¿qué ha pasado con…?" and "novedades" ask how a case goes (not to open
    one, though "reclamo" and "caso" are words of both tools); "open a ticket" and "se me fue el
    internet" report a fault, in English and in speech."""
    for text in ("¿Qué ha pasado con mi reclamo SOP-7731?", "¿Hay novedades de mi caso?"):
        result = route(text)
        assert result.needs_tool and result.best == "consultar_caso", text
    for text in ("Please open a ticket, the TV has no signal", "se me fue el internet otra vez"):
        result = route(text)
        assert result.needs_tool and result.best == "abrir_caso_soporte", text


def test_asking_whether_a_product_is_still_in_stock_is_a_search():
    """R6: "¿les quedan…?", "¿todavía venden…?", "in stock" ask the catalog for a product, in
    chat and in speech, not to change a plan or a visit."""
    for text in ("¿Les quedan cargadores USB-C de 30 W?", "eh todavía venden el parlante Flip 6",
                 "Is the Galaxy Buds 3 in stock?"):
        result = route(text)
        assert result.needs_tool and result.best == "buscar_producto", text


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


def test_a_word_of_the_customer_meets_the_tools_word_for_the_same_thing_in_either_language():
    """R6: "email", "link" and "ticket" are the catalog's "correo", "enlace" and "caso" for word overlap
    (the lexicon), so "I want to change my email address" updates the contact details rather than
    changing the plan; a word of two common meanings ("case", "cambio") is expanded to nothing."""
    index = catalog_index(CARDS)
    names = [card.name for card in index.cards]
    for word, tool in (("email", "actualizar_datos_contacto"), ("link", "generar_enlace_pago"), ("ticket", "consultar_caso")):
        assert lexical(index, expand(stems(word)))[names.index(tool)] > 0, word
        assert lexical(index, stems(word))[names.index(tool)] == 0, word
    assert expand(stems("case cambio")) == stems("case cambio")
    result = route("I want to change my email address")
    assert result.needs_tool and result.best == "actualizar_datos_contacto"


def test_the_thing_a_message_names_weighs_as_much_as_the_tools_action_word():
    """R6: customers name one action in many words ("cambié", "actualizar", "modificar"): the action word
    of a tool's verb ("cambiar el plan contratado") weighs no more than its description's words, so "cambié
    mi correo" overlaps the contact details' tool ("correo") more than the plan change ("cambiar")."""
    index = catalog_index(CARDS)
    names = [card.name for card in index.cards]
    scores = lexical(index, stems("cambié mi correo"))
    assert scores[names.index("actualizar_datos_contacto")] > scores[names.index("cambiar_plan")] > 0


def test_a_follow_up_that_names_its_own_tool_is_ranked_by_its_own_words():
    """R6: a follow-up that asks for another tool clearly ("¿y me mandas el link?" after the bill, "¿y
    cuándo pueden venir?" after a case) keeps only a small share of the earlier request in its ranking;
    one that names no tool of its own ("¿y en rojo?") is still ranked with it."""
    link = route("¿Cuánto debo este mes?", "Tu factura es de $ 120.500 y vence el 20.", "¿y me mandas el link?")
    assert link.needs_tool and link.follow_up and link.best == "generar_enlace_pago"
    visit = route("Se me dañó el módem", "Abrí el caso SOP-55.", "y cuándo pueden venir a revisarlo?")
    assert visit.needs_tool and visit.best == "agendar_visita_tecnica"
    plan = route("¿Cuánto me queda de datos?", "Te quedan 2 GB.", "y si me paso al plan de 20 gigas?")
    assert plan.needs_tool and plan.best == "cambiar_plan"
    red = route("Muéstrame cámaras WiFi", "Tenemos la Cámara WiFi para interiores a $ 179.900.", "¿y en rojo?")
    assert red.follow_up and red.best == "buscar_producto"


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


def test_changing_a_product_that_arrived_for_another_is_a_return():
    """R6: "me llegó rota, la quiero cambiar por una nueva" returns the product; it changes no plan."""
    text = "me llegó la licuadora rota y la quiero cambiar por una nueva"
    assert kinds_asked(normalise(text)) & {"change", "return"} == {"return"}
    result = route(text)
    assert result.needs_tool and result.best == "solicitar_devolucion"
    assert kinds_asked(normalise("Quiero cambiar mi plan")) & {"change", "return"} == {"change"}
    assert route("Quiero cambiar mi plan por el de 500 megas").best == "cambiar_plan"


def test_taking_note_of_the_agents_answer_asks_nothing_unless_it_goes_on():
    """R6: after an answer (no question of the agent), "ah bueno, alcanza", "listo, mañana pago en el banco"
    or "great, thanks" take note and need no tool, though they are short or name a payment; one that goes
    on with a request, an order or a question, even without its mark as in speech, is still routed."""
    balance = ("¿Cuánto debo?", "Tu saldo es de $ 89.900 y vence el 15.")
    for conversation_ in (("¿Cuánto me queda de datos?", "Te quedan 1,2 GB de 10 GB.", "ah bueno, alcanza"),
                          (*balance, "listo, mañana pago en el banco"),
                          ("Where is my order 5512?", "It is on its way and arrives tomorrow.", "great, thanks")):
        result = route(*conversation_)
        assert not result.needs_tool and result.reason == "acknowledges the agent's answer", conversation_[-1]
    for text, tool in (("listo, entonces mándame el enlace de pago", "generar_enlace_pago"),
                       ("ok y cuándo vence la del mes pasado", "consultar_factura"),
                       ("perfecto, quiero pagar ya", "generar_enlace_pago")):
        result = route(*balance, text)
        assert result.needs_tool and result.best == tool, text


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
    from runtime.routing import gate, phrasings

    patterns = [*phrasings._CUE_PATTERNS.values(), phrasings._ABOUT_PAYING, phrasings._EXCHANGE,
                *(value for value in vars(gate).values() if isinstance(value, re.Pattern))]
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


def test_cues_for_coverage_moving_a_visit_a_wrong_colour_and_noise_cancelling():
    """R6: "¿llega la fibra al barrio…?" asks about coverage; "muévela para el miércoles" moves a visit;
    "me llegó de otro color, la quiero cambiar" returns a product; "cancelación de ruido" is a feature of a
    product, not a cancellation; "256 gigas" of a phone is its storage, not mobile data."""
    assert "status" in kinds_asked(normalise("¿Llega la fibra al barrio Belén?"))
    assert route("¿Llega la fibra al barrio Belén?").best == "consultar_cobertura"
    moved = route("Agéndame el técnico el lunes", "Listo, quedó para el lunes.", "uy no, muévela para el miércoles")
    assert moved.needs_tool and moved.best == "cancelar_visita_tecnica"
    assert route("me llegó la chaqueta de otro color, la quiero cambiar").best == "solicitar_devolucion"
    assert "cancel" not in kinds_asked(normalise("Busco unos audífonos con cancelación de ruido"))
    assert route("Busco unos audífonos con cancelación de ruido").best == "buscar_producto"
    phone = route("¿Cuánto vale el Galaxy A55?", "El Galaxy A55 de 128 GB está en $1.599.000.", "y el de 256 gigas?")
    assert phone.needs_tool and phone.best == "buscar_producto"


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


def test_an_answer_to_the_agents_question_carries_the_request_on():
    """R6: "el jueves, en la mañana" to "¿Qué día le queda bien?" after "que me manden un técnico" books the
    visit; an address given to "¿Cuál es la nueva dirección?" after a move updates the contact data (alone, an
    address sounds like coverage); "sí, ya lo hice y sigue igual" to "¿Ya reinició el módem?" after a fault
    opens a case; "el sábado mejor" to "¿Para qué fecha desea la visita?" books it too. A question of its own in
    that place is routed by its own words."""
    visit = route("Necesito que venga un técnico a revisar el cableado", "Claro. ¿Qué día le queda bien?",
                  "el jueves, en la mañana")
    assert visit.needs_tool and visit.follow_up and visit.best == "agendar_visita_tecnica"
    moved = route("Me cambié de casa, necesito actualizar la dirección para la correspondencia",
                  "Con gusto. ¿Cuál es la nueva dirección?",
                  "Carrera 45 # 26-80, apartamento 301, Medellín")
    assert moved.needs_tool and moved.best == "actualizar_datos_contacto"
    fault = route("Se me fue el internet desde anoche", "Qué pena. ¿Ya reinició el módem?",
                  "sí, ya lo hice dos veces y la luz sigue roja")
    assert fault.needs_tool and fault.best == "abrir_caso_soporte"
    # "¿Para qué fecha desea…?" asks for a detail, it offers nothing; "mejor" there is no redirect.
    detail = route("Quiero que me instalen la fibra, ya me la aprobaron", "Perfecto. ¿Para qué fecha desea la visita?",
                   "el sábado mejor, temprano")
    assert detail.needs_tool and detail.follow_up and detail.best == "agendar_visita_tecnica"
    other = route("Necesito que venga un técnico", "Claro. ¿Qué día le queda bien?", "¿Dónde queda la tienda más cercana?")
    assert other.needs_tool and other.best == "buscar_tienda" and not other.follow_up


def test_a_question_about_the_agents_answer_a_notice_or_a_hold_ask_nothing():
    """R6: "¿o sea que…?" about what the agent just said, "no need to do anything" after a notice, "déjeme
    buscar la cédula", and general how-to or recommendation questions ask no tool; "entonces, ¿me pueden mandar el
    enlace?" still asks."""
    assert not route("¿Cuántos datos me quedan?", "Te quedan 4 GB; el ciclo se renueva el 10.",
                     "¿O sea que el 10 vuelvo a tener todo el paquete?").needs_tool
    assert route("¿Cuánto debo?", "Debes $ 82.000; vence el 15.", "Entonces, ¿me pueden mandar el enlace para pagar?").needs_tool
    for text in ("Just so you know I already paid at the store today, no need to do anything",
                 "¿Cada cuánto es recomendable reiniciar el router?", "una pregunta general, cómo funciona la fibra óptica"):
        assert not route(text).needs_tool, text
    assert not route("Quiero saber mi saldo", "Claro, ¿me indica el número de documento?",
                     "ya se lo paso, déjeme buscar la cédula").needs_tool
    switched = route("¿Qué plan tengo?", "Tienes Fibra 300 megas por $ 95.000 al mes.", "ok, switch me to the 900 one then")
    assert switched.needs_tool and switched.best == "cambiar_plan"


def test_thanks_after_a_done_action_how_to_and_chat_questions_ask_nothing_past_cases_and_exchanges_route():
    """R6: "de una, muchas gracias" after the agent did what was asked closes it (it does not lean on the request);
    "¿cómo cambio la clave del wifi?" is a how-to, "¿este chat atiende los domingos?" and "¿usted es una
    grabación?" are about the chat. "Abrí un reclamo hace ocho días y no me han respondido" asks how the case
    goes, not for a new one; changing something bought because another came is a return; "el martes no puedo"
    after a booked visit moves it."""
    assert not route("Cámbiame el correo a luisa.m@gmail.com", "Listo, quedó actualizado tu correo.",
                     "de una, muchas gracias").needs_tool
    for text in ("¿Cómo cambio la clave del wifi?", "¿Este chat atiende los domingos?", "oiga usted es una grabación"):
        assert not route(text).needs_tool, text
    assert route("Abrí un reclamo hace ocho días y no me han respondido nada").best == "consultar_caso"
    assert route("quiero cambiar unos audífonos que compré porque me mandaron el modelo equivocado").best == (
        "solicitar_devolucion")
    moved = route("Necesito que me instalen el internet", "Quedó agendada la visita para el martes en la mañana.",
                  "uy, el martes no puedo, mejor el jueves")
    assert moved.needs_tool and moved.best == "cancelar_visita_tecnica"


def test_a_message_in_another_language_than_the_catalogs_is_read_knowing_it():
    """R6: the index knows what its tools are written in (Spanish here, English for the BFCL tools); an English
    status question to the Spanish desk ("where is my order?"), whose cosines across languages run lower, still
    needs its tool, and a Spanish one is not marked as foreign."""
    from runtime.routing.gate import read

    index = catalog_index(CARDS)
    bfcl = json.loads((CATALOG.parent / "bfcl_sgd_catalog.json").read_text())
    assert index.language == "es" and catalog_index([ToolCard.from_definition(d) for d in bfcl[:6]]).language == "en"
    english, spanish = read(index, ["where is my order", "dónde está mi pedido"], cascade=False)
    assert english.other_language and not spanish.other_language
    for text in ("where is my order", "Where's my package?", "how much do I owe you this month"):
        result = route(text)
        assert result.needs_tool and result.best in {"consultar_pedido", "consultar_factura"}, text
