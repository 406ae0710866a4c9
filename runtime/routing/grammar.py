"""The grammar of a conversation, whatever the catalog (R6): what a message's words say of its place in
it (a greeting or thanks, a yes or a no to the agent's offer, a message that leans on the previous ones,
an answer to the agent's question, a notice, a question of general knowledge or about the chat itself),
in Spanish and English. Patterns over the normalised text (`words.normalise`: lower case, accents and
fillers folded), never a business's objects: `gate.py` reads them as facts for its decisions."""

import re


def last(messages: list[dict], role: str, before: int) -> str:
    """The content of the last message of `role` before position `before`."""
    for message in reversed(messages[:before]):
        if message.get("role") == role:
            return str(message.get("content") or "")
    return ""


def question(text: str) -> str:
    """The agent's last question in its reply ("Tu saldo es $ 89.900. ¿Te envío el enlace?" → the
    question), the offer a "sí" or "no" answers; the whole reply when it has none."""
    questions = [q.strip() for q in re.findall(r"[^.!?¡]*\?", text) if q.strip(" ¿?")]
    return questions[-1] if questions else text


SMALL_TALK = [
    "hola", "buenos días", "buenas tardes", "buenas noches", "gracias", "muchas gracias", "ok", "vale", "listo",
    "perfecto", "entendido", "adiós", "chao", "hasta luego", "¿eres un robot?", "¿eres una persona?", "¿quién eres?",
    "¿cómo te llamas?", "¿cómo estás?", "un momento", "espera un momento", "sí", "no", "no gracias", "jaja",
    "eso es todo", "nada más", "excelente", "me puedes repetir", "¿qué puedes hacer?", "¿me escuchas?", "aló",
    "¿con quién hablo?", "¿cómo va todo?", "¿cómo te va?",
    "hello", "hi", "good morning", "thanks", "thank you", "ok great", "bye", "goodbye", "are you a bot?",
    "who are you?", "how are you?", "wait a moment", "hold on", "yes", "no thanks", "that's all", "what can you do?",
    "can you hear me?", "who am I talking to?",
]
# A message that leans on the previous ones: "¿y en rojo?", "and the other one?", "algo más barato".
LEANS = re.compile(
    r"^(y|and|o|or|what about|how about|tambien|also|otro|otra|otros|otras|another|algo|alguno|alguna|mas|more|"
    r"ese|esa|esos|esas|eso|that|those|the other|el de|la de|los de|las de|el otro|la otra|en|in|con|with|sin|"
    r"without|de|del|para|for|y el|y la|y los|y las|y en|y si|and the|and in)\b"
)
ONLY_DATA = re.compile(r"^[\w\-./@+ ]*\d[\w\-./@+ ]*$")  # "1020304050", "SOP-11", "ana@correo.com 300 123"
EMAIL = re.compile(r"^\s*[\w.+\-]+@[\w\-]+(\.[\w\-]+)+\s*$")  # normalised text has lost the "@": read the raw one
# Phrased as a request ("could you…", "I'd like…", "¿me ayudas…?", "quiero…"): what it asks may still be
# nothing a tool does, so this is one more fact for the gate, not a decision.
REQUEST_FORM = re.compile(
    r"\b(i d like|i would like|i want|i need|(?<!no )need to|can you|could you|would you|please|i m looking|help me|"
    r"quiero|quisiera|necesito|me gustaria|puedes|podrias|me (puede|pueden|podria|podrian)|me ayudas|ayudame|por favor|"
    r"me (das|da|dan|pasas|envias|mandas)|dame|hazme|haz)\b"
)
# The customer's answer to an offer of the agent ("¿Quieres que te abra un caso?"): yes — the offer is the
# subject ("dale", "sí, regístralo", "mándamelo"); no — nothing is asked ("no, gracias, lo pago en el banco"),
# unless the rest redirects to something else ("no, mejor mándenme un técnico").
YES = re.compile(r"^(si|sí|dale|claro|ok|okay|de una|hagale|hazlo|hagalo|por favor|porfa|va|listo|perfecto|yes|yeah|sure|"
                  r"please|go ahead|do it|yep|[a-zñ]{4,}(melo|mela|selo|sela|alo|ala|elo|ela)\b)\b")
NO = re.compile(r"^(no\s*[,.!]|no$|no (no|gracias|tranquil|thanks|thank you|por ahora|todavia|aun|mejor|asi esta|esta bien)\b|"
                 r"(todavia|aun|ahorita|ahora|por ahora) no\b|mejor no\b|nah\b|nope\b|not (now|yet|today)\b|never ?mind\b)")
REDIRECT = re.compile(r"\b(mejor(?! no\b)|prefiero|preferiria|en cambio|en vez|mas bien|instead|rather|quiero|necesito|quisiera|"
                       r"i want|i d like|i need)\b")
# An agent's question that offers something (to do an action, or more help) rather than asks for data.
OFFER = re.compile(r"\b(quieres|quiere|quisieras|deseas|desea|te parece|le parece|lo hago|lo (abro|registro|agendo|cambio)|"
                    r"te (genero|envio|mando|agendo|abro|paso|registro|cambio|muestro)|algo mas|"
                    r"would you like|do you want|shall i|should i|want me to|anything else)\b")
# The customer taking note of what the agent answered ("ah bueno, alcanza", "listo, mañana pago en el banco",
# "great, thanks"): nothing is asked, unless it goes on with a question or an order ("listo, mándame el enlace").
ACKNOWLEDGES = re.compile(r"^(ah+|aja|ok|okay|vale|listo|perfecto|bueno|entiendo|entendido|ya veo|gracias|mil gracias|"
                           r"de una|genial|super|excelente|got it|great|thanks|thank you|i see|alright|cool|"
                           r"sounds good)\b")
IMPERATIVE = re.compile(
    r"\b(cambia|cambiame|agenda|agendame|abre|abreme|cancela|cancelame|genera|generame|busca|buscame|manda|mandame|envia|"
    r"enviame|pasa|pasame|muestra|muestrame|consulta|consultame|revisa|revisame|dime|regalame|confirmame|transfiere|"
    r"change|switch|move|upgrade|put me|book|cancel|send|show|check|open|schedule|find|get|give|tell)\b")
ALSO = re.compile(r"\b(tambien|ademas|aparte|otra cosa|also|another thing|as well)\b")
GOES_ON = re.compile(r"^(y|and|pero|but|entonces|then|ahora|now|tambien|also|otra cosa|another thing)\b")
QUESTION_WORD = re.compile(r"\b(cuanto|cuanta|cuantos|cuantas|cuando|donde|como|cual|cuales|quien|que|por que|how|what|when|where|"
                            r"which|who|why|can|could|do|does|is|are)\b")
ASKS_DETAIL = re.compile(r"^(que|cual|cuales|cuando|donde|para (que|cuando)|en (que|cual)|a (que|cual)|de (que|cual)|"
                          r"como|cuanto|cuantos|cuantas|what|which|when|where|how)\b")
# A question about what the agent just answered ("¿o sea que el 5 ya tengo los 20 completos?", "so it's free?").
CLARIFIES = re.compile(r"^(o sea|osea|entonces|so|wait|then|or)\b")
LEADING_FILLER = re.compile(r"^((eh+|em+|mm+|hmm|uh|um+|ah|aja|aha|bueno|pues|este|o sea|well|so)\b[\s,.;:]*)+")
# What a message that needs no tool often is, though it names products or services (facts for the gate):
# a notice or thanks ("ya pagué, solo les aviso"), a question of general knowledge or opinion ("¿qué
# diferencia hay entre…?", "¿vale la pena…?", "carísimo"), and a question about the conversation itself.
NOTICE = re.compile(
    r"\b(ya (pague|consigne|cancele|hice|devolvi|llego|me llego|me llegaron|funciona|quedo|quedamos|esta|vino)|"
    r"(les?|solo les?|nada mas les?) (aviso|cuento|informo|comento)|(para|solo) (avisar|contar|informar)|les informo|"
    r"just (letting you know|so you know|to let you know)|fyi|i already (paid|did|returned|got)|"
    r"gracias|thanks|thank you|excelente|muy amable|todo (perfecto|bien|listo)|funcionando|buenisim|super nice|great job|"
    r"esp[eé]r(e|a)me|un moment(o|ico|ito)|un segundo|ya vuelvo|estoy buscando|"
    r"d[eé]j(e|a)me (buscar|ver|revisar|mirar)|ya (se )?(lo|la|se lo|se la) (paso|envio|mando|doy)|hold on|"
    r"one (sec|second|moment)|let me (find|look for|get|check))\b")
KNOWLEDGE = re.compile(
    r"(^|\b)(como se |como (conecto|configuro|reinicio|activo|instalo|enciendo|prendo|apago)\b|"
    r"que (significa|quiere decir|es mejor)|para que sirve|diferencia (hay )?entre|cual es (mejor|la diferencia)|"
    r"es normal|es cierto|en general|pregunta general|vale la pena|conviene|me parece|la verdad|carisim|que pereza|"
    r"\bmas \w+ que\b|que es eso de|como funciona|(es|sera) recomendable|(usted|tu) que (opina|piensa)|que opinas?\b|"
    r"cual de (los|las) (dos|tres)\b|"
    r"por que (el|la|los|las|se)\b|how does .{0,40} work|what does .{0,40} mean|which of the (two|three)|"
    r"how (do|can) i (turn|set|connect|reset|configure|enable)|what s the difference|which (is|one is) better|"
    r"(better|faster|slower|worse|cheaper) than|is it worth|is it normal|i think|(more|less) \w+ than)")
ABOUT_CHAT = re.compile(
    r"\b(repite(s|me|lo|la)?|repitame|(cual|que|como) era\b|what was (the|that|it)\b|repetir(me|lo|la)?|repeat|"
    r"vuelve(s)? a decir|lo ultimo que|que (dijiste|me dijiste)|me diste|you (said|sent)|"
    r"say (that|it) again|eres (un|una) (robot|bot|persona|maquina)|con quien (estoy hablando|hablo)|"
    r"(usted|tu) es (un|una) (robot|bot|persona|maquina|grabacion)|(es|eres) (una )?grabacion|"
    r"(este|el) chat (funciona|atiende|esta)|this chat|are you a (bot|robot|human|person|recording)|am i talking to|"
    r"(que|cuales|en que) idiomas|what languages|do you speak)")
# A question that names neither the customer nor the desk ("¿cuál es la capital de…?") rather than "¿cuál es mi saldo?".
PERSONAL = re.compile(
    r"\b(mi|mis|me|mio|mia|conmigo|yo|tengo|tenia|quiero|quisiera|necesito|busco|debo|pague|compre|nos|nuestro|nuestra|"
    r"ustedes|tienen|venden|les|tu|tus|te|puedes|podrias|my|me|mine|i|im|id|ive|we|our|us|you|your)\b")
