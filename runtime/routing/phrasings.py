"""How customers ask for each kind of action, in Spanish and English (R6): platform knowledge
that turns a tool's verb into requests a message can be compared with.

A tool's `com.asixto/verb` starts with a verb ("consultar un caso de soporte", "find events").
Customers do not talk like that: they say "¿cómo va mi caso?" or "any update on my ticket?".
Sentence encoders compare a question with a question far better than with a description, so
the index embeds, for each tool, a few requests built from the phrasings of its verb's kind,
with the verb's object filled in ("¿Cómo va mi caso de soporte?"). The kinds are few and
generic; a verb of no known kind gets the generic "I want to…" phrasings only.

Finding a place (a store, an office) is a search of its own kind, "locate": "¿tienen routers?"
asks for a thing, "¿hay oficinas en Medellín?" for a place, and a desk that has both tools must
not send the first to the store finder.
"""

import re

from runtime.routing.words import fold

# verb (first word, folded) → kind
KINDS = {
    "search": "buscar encontrar mostrar listar ver find search lookup look list show browse discover get_options",
    "status": "consultar revisar verificar obtener conocer check get retrieve fetch view track query read",
    "report": "abrir crear registrar reportar radicar levantar open create report file add log submit register",
    "book": "agendar programar reservar apartar comprar book schedule reserve buy purchase order rent",
    "cancel": "cancelar anular reprogramar eliminar borrar cancel reschedule delete remove",
    "change": "cambiar actualizar modificar editar change update modify edit set upgrade",
    "pay": "pagar generar pay make request send transfer",
    "handover": "transferir escalar pasar handover escalate",
    "return": "solicitar devolver return refund",
    "play": "reproducir poner play stream",
    "share": "compartir enviar share",
    "compute": "calcular computar convertir traducir explicar calculate compute convert translate solve explain",
}
_KIND_OF = {word: kind for kind, words in KINDS.items() for word in words.split()}
# The objects that make a search verb a "locate" verb ("buscar una tienda cercana", "find a store").
_PLACES = r"tiendas?|oficinas?|sedes?|sucursal(es)?|puntos? de (atencion|venta)|stores?|offices?|branch(es)?|locations?"
_PLACE = re.compile(rf"\b({_PLACES})\b")

PHRASINGS = {
    "search": ["¿Tienen {x}?", "¿Cuánto cuesta {x}?", "Busco {x}", "Muéstrame {x}", "Do you have {x}?",
               "How much is {x}?", "I'm looking for {x}", "Find me {x}"],
    "status": ["¿Cómo va {x}?", "¿En qué estado está {x}?", "Quiero saber {x}", "¿Cuál es {x}?",
               "What's the status of {x}?", "Can you check {x}?", "What is {x}?"],
    "report": ["Quiero {v}", "Tengo un problema, quiero {v}", "No me funciona, necesito {v}", "I want to {v}",
               "Something is broken, please {v}"],
    "book": ["Quiero {v}", "¿Puedo {v} para mañana?", "Necesito {v}", "I'd like to {v}", "Can I {v} for tomorrow?"],
    "cancel": ["Quiero {v}", "Ya no lo necesito, quiero {v}", "Please {v}", "I need to {v}"],
    "change": ["Quiero {v}", "Necesito {v}", "I want to {v}", "Please {v}"],
    "pay": ["Quiero {v}", "¿Cómo hago para {v}?", "I want to {v}", "How can I {v}?"],
    "locate": ["¿Dónde queda {x}?", "¿Hay {x} en mi ciudad?", "Where is {x}?", "Is there {x} near me?"],
    "handover": ["Quiero {v}", "Quiero hablar con una persona", "I want to talk to a human", "Please {v}"],
    "return": ["Quiero {v}", "Necesito {v}", "I want to {v}", "I need to {v}"],
    "play": ["{V}", "Quiero {v}", "I want to {v}"],
    "share": ["{V}", "Quiero {v}", "I want to {v}"],
    "compute": ["{V}", "¿Me ayudas a {v}?", "Can you {v}?", "Please {v}"],
    None: ["Quiero {v}", "Necesito {v}", "I want to {v}", "Can you {v}?"],
}


def kind_of(verb: str) -> str | None:
    words = fold(verb).split()
    kind = _KIND_OF.get(words[0]) if words else None
    if kind == "search" and _PLACE.search(" ".join(words[1:])):
        return "locate"
    return kind


def requests_for(verb: str) -> list[str]:
    """A few customer requests for a tool whose verb is `verb`."""
    verb = " ".join(verb.split())
    if not verb:
        return []
    words = verb.split()
    obj = " ".join(words[1:]) or verb
    kind = kind_of(verb)
    return [p.format(x=obj, v=verb, V=verb[:1].upper() + verb[1:]) for p in PHRASINGS.get(kind, PHRASINGS[None])]


# What a message sounds like when it asks for an action of a kind (folded text, word boundaries).
_CUES = {
    "search": r"tiene[ns]?|vende[ns]?|venta|cuanto (cuesta|cuestan|vale|valen)|precio|busco|buscando|comprar|catalogo|"
              r"opciones|do you (have|sell)|how much|price|looking for|buy|find me|show me|muestrame|find|search|"
              r"look(ing)? (for|up)|lookup|busca(r|me|ndo)?|encontrar|encuentra(me)?|any (good|nice)|recommend|"
              r"recomienda|suggest|suger|are there|is there any|hay (algun|alguna|algo)|les queda(n)?|existencias|en stock|"
              r"in stock|todavia (tienen|hay|venden)|still (have|sell)|available",
    "locate": rf"donde (queda|quedan|esta|estan|hay)|{_PLACES}|cerca|near|nearest|closest",
    "status": r"como va|en que (va|estado)|estado|donde (esta|va)|ya (lo |la |los |las |me )?(llego|llegaron|despacharon|enviaron|mandaron|resolvieron|arreglaron|solucionaron)|(has|have|was|is) (it|this|that|the \w+) (been )?(fixed|resolved|solved|shipped|sent)|cuando (llega|me llega)|"
              r"status|update on|where is|track|cuanto (debo|tengo que pagar)|cuantos|cuantas|me quedan|left|que (paso|ha pasado) con|"
              r"novedad(es)?|any news|news on|what happened (to|with)|has .{0,80} (shipped|arrived)|"
              r"no me han (dicho|respondido|solucionado|llamado|contestado)|still no (answer|news|reply)",
    "report": r"abr(ir|a|e|an) (un|una|el|la|mi|otro|otra) |(te|le|lo) (abro|registro|radico)\b|no (me )?(funciona|sirve|prende|tengo|llega|carga)|se (me )?(cae|cayo|dano|va|fue)|dano|falla|problema|"
              r"queja|reclamo|reportar|not working|broken|keeps dropping|down|issue|problem|complaint|report|"
              r"open (a|an|the|my|another) \w+|doesn t work",
    "book": r"agendar|programar|reservar|(te|le|lo|la) (agendo|programo|reservo)|que dia pueden|venga|vengan|manden|book|schedule|reserve|appointment|buy|"
            r"purchase|reservation|reserva|cita|mand(ar|en|e) a alguien|send someone|"
            r"come (over|on|to)|pueden venir|puede venir",
    "cancel": r"cancel|anul|ya no (necesito|voy)|reprogram|cambiar la fecha|no voy a estar|reschedul|postpone|aplaz|"
              r"(mover|pasar|correr) (la|el|mi) \w+ (para|al|a la|a otro|a otra)|(ese dia|el \w+) no (estoy|puedo|voy a estar)|(muevela|muevala|moverla|pasarla|correrla|corrala|correla|muevelo|moverlo)\b|move (the|my) (visit|appointment|booking)|otro dia",
    "change": r"cambiar|cambio|actualiz|modific|subir|pasarme|upgrade|update|change",
    "handover": r"asesor|persona|humano|alguien de verdad|alguien (que )?me (ayude|atienda)|hablar con alguien|human|agent|"
                r"someone real|talk to (someone|somebody)|someone (to )?help",
    "return": r"devolver|devuelv|devolucion|return|refund|money back|reembols|reintegr",
    "play": r"play|listen|stream|hear|reproduc|escuchar|ponme|pon (la|una|el|un|algo)|poner (la|una|el|un|algo)",
    "pay": r"pay|paid|payment|pagar|pago|pague|transfer|send (money|\d)|enviar (plata|dinero)",
    "share": r"share|compart|send my|enviar mi|mandar mi",
    # Working something out rather than acting on an account: a catalog without such a tool has
    # nothing for it (the gate weighs a message asking only for kinds that no tool has).
    "compute": r"calcul|comput|solve|resuelv|resolver (la|el|esta|este)|integral|derivat|derivad|equation|ecuacion|"
               r"area of|volume of|square root|raiz cuadrada|convert|convierte|convertir|translate|traduc|explain|"
               r"explica|define|definicion|definition|que significa|what does .{0,80} mean|"
               r"(cuanto (es|da)|what is|what s|how much is) \d+ (mas|menos|por|entre|plus|minus|times|divided by) \d+",
}
# A customer writes these texts: every gap in a pattern is bounded (.{0,80}, never .*), so a long message
# costs linear time, not quadratic.
_CUE_PATTERNS = {kind: re.compile(rf"\b({pattern})") for kind, pattern in _CUES.items()}


# Asking how much or by when to pay ("¿cuánto tengo que pagar?", "¿hasta cuándo tengo plazo para pagar?")
# asks what the bill says, not to pay it.
_ABOUT_PAYING = re.compile(
    r"\b(cuanto (tengo|debo|hay|me toca)( que)? pag|(hasta )?(cuando|que dia|que fecha) (tengo|debo|hay|puedo|me toca|vence)"
    r"( que| para| plazo para)? pag|plazo (para|de|hasta) (pag|el pago)|fecha (limite )?(de|para) pag|"
    r"how much (do i|should i|must i) (have to )?pay|when (do i|should i|must i|is) .{0,20}\b(pay|due)|(due date|deadline) (to|for) pay)")


# Something the customer did before ("hice una transferencia ayer y no llega", "ya abrí un reclamo", "I placed an
# order last week") is asked about, not done again: a verb of doing in the past tense, first person, with its object.
_DONE_BEFORE = re.compile(
    r"\b((ya )?(hice|abri|puse|radique|registre|pedi|solicite|mande|envie|compre|agende|reserve|reporte|pague|meti|"
    r"presente|tramite|inscribi|postule|deposite|transferi|programe|cree) (un|una|el|la|mi|los|las|unos|unas)\b|"
    r"i (already )?(made|opened|filed|placed|sent|submitted|requested|booked|reported|paid|bought|ordered|applied|"
    r"scheduled|created|transferred) (a|an|the|my|some)\b)")


def done_before(folded: str) -> bool:
    """It tells of something the customer did before ("solicité el reembolso hace tres semanas")."""
    return bool(_DONE_BEFORE.search(folded))


def kinds_asked(folded: str) -> set[str]:
    """The kinds of action a (normalised, folded) message sounds like it asks for."""
    found = {kind for kind, pattern in _CUE_PATTERNS.items() if pattern.search(folded)}
    if "pay" in found and _ABOUT_PAYING.search(folded):
        found = (found - {"pay"}) | {"status"}
    if _DONE_BEFORE.search(folded):
        found = {kind for kind in found if kind in ("search", "locate", "status", "handover")} | {"status"}
    return found
