"""The verb a request governs (R6, issue 18: check versus do), read from the words around it, whatever the
business, in Spanish and English: "¿le pueden **poner** silla de ruedas?", "quería **saber** si quedan
asientos", "**hacedme** el check-in", "could you **send** me the receipt", "I'd like to **know** when…".

A request names its action in a few set places: after a verb of wanting, needing or being able ("quiero…",
"¿me pueden…?", "I'd like to…", "could you…"), or as an order at the start of the message (an imperative
with its pronoun: "ponme", "mándenmelo", "dígame", "tell me"). The verbs of knowing are a closed class of
the language (know, see, check, look up, find out, tell, show; saber, ver, consultar, revisar, averiguar,
decir, mostrar…): any other verb in those places asks to do something. `governed(plain)` gives "know",
"act" or None (no such verb found), over the normalised text (`words.normalise`).

Grammar, never a business's objects: no noun is named here.
"""

import re
from functools import lru_cache

from runtime.routing.language import text_language

# After these the next verb (past a pronoun or two) is what is asked: "quiero cambiar", "¿me pueden
# reenviar…?", "I need to change", "can you send". Not after asking whether one may or must ("¿puedo
# devolver…?", "can I still send it back?", "¿qué tengo que llevar?"): that asks to know what is allowed.
_SPANISH_LEADS = (
    r"quiero|quisiera|queria|quise|necesito|necesitaba|necesitaria|me gustaria|deseo|desearia|"
    r"puedes|puede|pueden|podes|podrias|podria|podrian|me ayudas a|me ayuda a|me ayudan a|ayudame a|ayudeme a|"
    r"vengo a|favor de|por favor"
)
_ENGLISH_LEADS = (
    r"i want to|i wanna|i d like to|i would like to|i need to|i have to|i m trying to|im trying to|i am trying to|"
    r"can you|could you|would you|will you|help me|please|i m looking to|i was hoping to|i wanted to|i d love to"
)
_LEAD = re.compile(rf"\b({_SPANISH_LEADS}|{_ENGLISH_LEADS})\b")
# Words between a lead and its verb: pronouns, "ya", "también", "please", "just"…
_BETWEEN = {"me", "te", "le", "les", "lo", "la", "los", "las", "nos", "se", "ya", "tambien", "porfa", "favor", "por",
            "a", "que", "usted", "ustedes", "tu", "vos", "just", "please", "also", "quickly", "kindly", "you", "to",
            "i", "we", "pls", "plz", "help", "us", "him", "her", "them", "actually", "maybe", "so"}
# A Spanish infinitive, with its pronouns: "cambiar", "hacerlo", "enviarmelo", "reenviarnos".
_INFINITIVE = re.compile(r"^[a-zñ]{1,20}(ar|er|ir)(me|te|le|les|lo|la|los|las|nos|se|melo|mela|selo|sela|noslo|nosla)?$")
# An order at the start, with its pronoun: "ponme", "hazme", "hacedme", "mándenme", "dígame", "envíemelo".
_IMPERATIVE = re.compile(r"^[a-zñ]{2,20}(me|nos|melo|mela|noslo|nosla|selo|sela)$")
# Words that end like an order and are not one (greetings, pronouns, adverbs, common nouns of every desk).
_NOT_ORDERS = {"hola", "buenas", "nombre", "nombres", "informe", "siempre", "mientras", "como", "cual", "ademas",
               "este", "esta", "mismo", "misma", "apenas", "importe", "cliente", "clientes", "usted", "ustedes",
               "oiga", "oigame", "mire", "mireme", "disculpe", "disculpeme", "perdon", "perdoname", "perdone",
               "perdoneme", "escucheme", "fijese", "fijate", "sabe", "sale", "vale", "calle", "simple", "noble",
               "doble", "posible", "tele", "some", "time", "home", "name", "same", "come", "become", "welcome"}
# Openers that come before what is asked: greetings, attention-getters, politeness.
_OPENERS = {"hola", "buenas", "buenos", "dias", "tardes", "noches", "buen", "dia", "oye", "oiga", "oigame", "mira",
            "mire", "disculpe", "disculpa", "perdon", "perdone", "senor", "senora", "senorita", "amigo", "amiga",
            "hi", "hello", "hey", "good", "morning", "afternoon", "evening", "excuse", "sorry",
            "porfa", "please", "pls", "una", "pregunta", "consulta", "quick", "question", "ok", "okay", "vale",
            "listo", "y", "and", "entonces", "then", "ahora", "now", "tambien", "also", "pero", "but"}
# An English order at the start: a word that is no pronoun, article, question word or auxiliary, before an
# object ("cancel my order", "send me the receipt", "tell me my balance").
_ENGLISH_OBJECTS = {"me", "my", "the", "this", "that", "it", "us", "our", "all", "both", "an"}
_NOT_ENGLISH_ORDERS = {
    "i", "im", "id", "ive", "we", "you", "it", "its", "is", "are", "was", "were", "do", "does", "did", "can", "could",
    "would", "will", "should", "what", "when", "where", "why", "how", "which", "who", "hi", "hello", "hey", "thanks",
    "thank", "yes", "no", "ok", "okay", "so", "and", "but", "my", "the", "a", "an", "this", "that", "there", "here",
    "also", "just", "please", "sorry", "good", "great", "nice", "not", "all", "about", "for", "with", "in", "on",
    "at", "to", "from", "of", "by", "if", "as", "like", "love", "hate", "got", "had", "has", "have", "been", "yeah",
    "yep", "yup", "sure", "uh", "um", "oh", "well", "right", "cool", "alright", "hmm", "one", "last", "first"}
# The verbs of knowing (a closed class of the language), by how their forms begin (folded, no accents).
_KNOWING = re.compile(
    r"^(saber|sabe|saberlo|ver|verlo|verla|verlos|verlas|veo|consult|revis|verific|chequ|chec|averigu|conoc|mir|busc|"
    r"pregunt|decir|decirme|decime|dime|digame|diganme|dimelo|digamelo|mostr|muestr|contar|contarme|contame|cuentame|"
    r"cuenteme|expli|entend|rastre|cotiz|calcul|ubic|localiz|fij|compar|"
    r"know|see|check|look|find|view|track|tell|show|ask|verify|understand|learn|review|read|hear|figure|"
    r"confirm|search|browse|compare|get an idea|get info)")
_NEGATED = re.compile(r"\b(no|not|don t|dont|never|nunca|ni)\s*$")
# Verbs that say nothing of the action ("¿me pueden ayudar con…?", "can you help with…").
_NEUTRAL = re.compile(r"^(ayud[a-z]*|help|assist|get|have|tener|do|hacer)$")
# "necesito que alguien me atienda" asks for a person, not for an action of the desk's.
_SOMEONE = {"alguien", "someone", "somebody", "anyone", "anybody"}
# "check in" is an action (English phrasal verb): "check me in", "check in for my flight".
_CHECK_IN = re.compile(r"\bcheck (me |us |him |her |them |my \w+ )?in\b")


def _kind(verb: str, rest: str) -> str:
    if verb == "check" and _CHECK_IN.match(f"{verb} {rest}"):
        return "act"
    return "know" if _KNOWING.match(verb) else "act"


def _verb_after(words: list[str], start: int) -> tuple[str, int] | None:
    """The first verb after position `start`, past at most three pronouns or fillers: (verb, its position)."""
    skipped = 0
    for position in range(start, min(len(words), start + 5)):
        word = words[position]
        if word in _BETWEEN and skipped < 3:
            skipped += 1
            continue
        return word, position
    return None


@lru_cache(maxsize=1024)  # read by the action combination and by the gate, for the same message
def governed(plain: str) -> str | None:
    """"know", "act" or None: what the verbs a request governs ask for (any act wins over knowing, as
    "quería saber si me pueden cambiar el asiento" asks to change it)."""
    words = plain.split()
    if not words:
        return None
    found = []
    for match in _LEAD.finditer(plain):
        if _NEGATED.search(plain[:match.start()]):  # "no quiero esperar", "I don't want to wait"
            continue
        start = len(plain[:match.end()].split())
        after = _verb_after(words, start)
        if after is None:
            continue
        verb, position = after
        if _NEUTRAL.match(verb) or verb in _SOMEONE:
            continue
        english = match.group(0).split()[0] in {"i", "can", "could", "would", "will", "help", "please"}
        subjunctive = start < len(words) and words[start] == "que"  # "necesito que me manden…"
        if english or subjunctive or _INFINITIVE.match(verb):
            found.append(_kind(verb, " ".join(words[position + 1: position + 4])))
    position = next((n for n, word in enumerate(words) if word not in _OPENERS), None)
    if position is not None:
        opening, rest = words[position], words[position + 1: position + 4]
        spanish = opening not in _NOT_ORDERS and _IMPERATIVE.match(opening)
        english = (opening not in _NOT_ENGLISH_ORDERS and rest and rest[0] in _ENGLISH_OBJECTS
                   and text_language(plain) == "en")
        if spanish or english:
            found.append(_kind(opening, " ".join(rest)))
    if not found:
        return None
    return "act" if "act" in found else "know"
