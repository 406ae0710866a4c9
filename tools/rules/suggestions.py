"""Suggested `_meta` for a tool whose server does not declare ours (C6, issue 8): a verb phrase
in the tenant's language ("get_current_time" → "consultar la hora actual" / "get the current
time") and capabilities: the tenant's scenarios the tool's own words name, none when they name
none (issue 20: never the tenant's whole list).

Deterministic and small on purpose: a verb table (English and Spanish, see verbs.py) and a
short glossary of common nouns and adjectives. A word outside the glossary is kept as it is;
the admin confirms or edits every suggestion in the overlay editor. Pure functions.
"""

import re

from .verbs import AMBIGUOUS_WRITE_VERBS, fold, name_words, phrase_words, write_verbs

# Leading verb (folded) → (Spanish infinitive, English verb).
VERB_TABLE = {
    "get": ("consultar", "get"), "fetch": ("obtener", "fetch"), "read": ("leer", "read"), "list": ("listar", "list"),
    "search": ("buscar", "search"), "find": ("buscar", "find"), "show": ("mostrar", "show"), "view": ("ver", "view"),
    "check": ("verificar", "check"), "query": ("consultar", "query"), "lookup": ("consultar", "look up"),
    "count": ("contar", "count"), "describe": ("describir", "describe"), "calculate": ("calcular", "calculate"),
    "compare": ("comparar", "compare"), "echo": ("repetir", "echo"), "return": ("devolver", "return"),
    "print": ("mostrar", "print"), "create": ("crear", "create"), "add": ("agregar", "add"), "open": ("abrir", "open"),
    "update": ("actualizar", "update"), "edit": ("editar", "edit"), "delete": ("eliminar", "delete"),
    "remove": ("eliminar", "remove"), "write": ("escribir", "write"), "move": ("mover", "move"),
    "send": ("enviar", "send"), "toggle": ("alternar", "toggle"), "trigger": ("iniciar", "trigger"),
    "start": ("iniciar", "start"), "simulate": ("simular", "simulate"), "compress": ("comprimir", "compress"),
    "gzip": ("comprimir", "compress"), "convert": ("convertir", "convert"), "set": ("establecer", "set"),
    "cancel": ("cancelar", "cancel"), "book": ("reservar", "book"), "schedule": ("agendar", "schedule"),
    "close": ("cerrar", "close"), "run": ("ejecutar", "run"), "execute": ("ejecutar", "execute"),
    "navigate": ("navegar a", "navigate to"), "commit": ("confirmar", "commit"), "checkout": ("cambiar a", "check out"),
    "reset": ("restablecer", "reset"), "diff": ("comparar", "compare"),
    "sample": ("muestrear", "sample"), "annotate": ("anotar", "annotate"), "download": ("descargar", "download"),
    "upload": ("subir", "upload"), "validate": ("validar", "validate"), "verify": ("verificar", "verify"),
    "consultar": ("consultar", "look up"), "buscar": ("buscar", "search"), "listar": ("listar", "list"),
    "obtener": ("obtener", "get"), "crear": ("crear", "create"), "abrir": ("abrir", "open"),
    "actualizar": ("actualizar", "update"), "cancelar": ("cancelar", "cancel"), "eliminar": ("eliminar", "delete"),
    "agendar": ("agendar", "schedule"), "reservar": ("reservar", "book"), "enviar": ("enviar", "send"),
    "registrar": ("registrar", "register"), "cotizar": ("cotizar", "quote"), "calcular": ("calcular", "calculate"),
    "ver": ("ver", "view"), "mostrar": ("mostrar", "show"), "verificar": ("verificar", "check"),
}

# English noun → (Spanish, gender). Plurals are made by rule.
NOUNS = {
    "time": ("hora", "f"), "file": ("archivo", "m"), "directory": ("directorio", "m"), "node": ("nodo", "m"),
    "entity": ("entidad", "f"), "relation": ("relación", "f"), "observation": ("observación", "f"),
    "graph": ("grafo", "m"), "memory": ("memoria", "f"), "url": ("URL", "f"), "page": ("página", "f"),
    "branch": ("rama", "f"), "log": ("registro", "m"), "status": ("estado", "m"), "message": ("mensaje", "m"),
    "sum": ("suma", "f"), "number": ("número", "m"), "resource": ("recurso", "m"), "link": ("enlace", "m"),
    "reference": ("referencia", "f"), "image": ("imagen", "f"), "environment": ("entorno", "m"), "env": ("entorno", "m"),
    "content": ("contenido", "m"), "operation": ("operación", "f"), "customer": ("cliente", "m"),
    "client": ("cliente", "m"), "order": ("pedido", "m"), "case": ("caso", "m"), "ticket": ("ticket", "m"),
    "appointment": ("cita", "f"), "product": ("producto", "m"), "price": ("precio", "m"), "account": ("cuenta", "f"),
    "user": ("usuario", "m"), "timezone": ("zona horaria", "f"), "zone": ("zona", "f"), "info": ("información", "f"),
    "information": ("información", "f"), "item": ("elemento", "m"), "text": ("texto", "m"), "research": ("investigación", "f"),
    "logging": ("registro", "m"), "update": ("actualización", "f"), "subscriber": ("suscriptor", "m"),
    "tree": ("árbol", "m"), "folder": ("carpeta", "f"), "path": ("ruta", "f"), "repository": ("repositorio", "m"),
    "document": ("documento", "m"), "query": ("consulta", "f"), "invoice": ("factura", "f"), "payment": ("pago", "m"),
    "commit": ("commit", "m"), "change": ("cambio", "m"), "tool": ("herramienta", "f"), "prompt": ("prompt", "m"),
}
ADJECTIVES = {
    "current": ("actual", "actual"), "new": ("nuevo", "nueva"), "annotated": ("anotado", "anotada"),
    "structured": ("estructurado", "estructurada"), "tiny": ("pequeño", "pequeña"), "simulated": ("simulado", "simulada"),
    "long": ("largo", "larga"), "running": ("en curso", "en curso"), "multiple": ("múltiple", "múltiple"),
    "allowed": ("permitido", "permitida"), "unstaged": ("sin preparar", "sin preparar"), "staged": ("preparado", "preparada"),
    "local": ("local", "local"), "recent": ("reciente", "reciente"),
}
ENGLISH_FILLERS = frozenset({"the", "a", "an", "of", "for", "to", "and", "or", "with", "by", "as", "all"})


def suggest_verb(*, name: str, title: str = "", description: str = "", language: str = "es") -> str:
    """A short phrase that starts with a verb, in `language` ("es" or "en"), or "" when no
    verb can be found in the name, the title or the description's first words."""
    for words in (name_words(name or ""), phrase_words(title or ""), phrase_words(description or "")[:3]):
        for index, word in enumerate(words):
            verb = _verb_of(word)
            if verb is None:
                continue
            entity = [w for w in words[index + 1:] if w not in ENGLISH_FILLERS][:4] or [
                w for w in words[:index] if w not in ENGLISH_FILLERS
            ][:2]
            spanish, english = verb
            if fold(word) in AMBIGUOUS_WRITE_VERBS and not write_verbs(words[index:index + 2]):
                # "open_nodes" reads (annotations.py): a Spanish "abrir" would say it writes.
                spanish = "consultar"
            if (language or "es")[:2] == "en":
                return " ".join([english, *(["the", *entity] if entity else [])])
            return _contract(" ".join([spanish, *_spanish_entity(entity)]).strip())
    return ""


def _contract(phrase: str) -> str:
    """Spanish contractions: "cambiar a el repositorio" → "cambiar al repositorio"."""
    return re.sub(r"\b(a|de) el\b", lambda match: "al" if match.group(1) == "a" else "del", phrase)


def suggest_capabilities(*, name: str, title: str = "", description: str = "", scenarios: list[str] | None) -> list[str]:
    """The tenant's scenarios the tool's own words mention, none when they mention none (the
    admin places the tool); ["general"] when the tenant has no scenarios."""
    if not scenarios:
        return ["general"]
    words = set(name_words(name or "")) | set(phrase_words(title or "")) | set(phrase_words(description or "")[:60])
    mentioned = [s for s in scenarios if set(phrase_words(s)) & words]
    return mentioned


def _verb_of(word: str):
    word = fold(word)
    for candidate in (word, word[:-1] if word.endswith("s") else None, word[:-2] if word.endswith("es") else None):
        if candidate and candidate in VERB_TABLE:
            return VERB_TABLE[candidate]
    return None


def _spanish_entity(words: list[str]) -> list[str]:
    """English entity words in Spanish order: article, head noun (the last word), adjectives,
    then the other nouns as "de …" modifiers. Unknown words are kept as they are."""
    if not words:
        return []
    *before, head = words
    noun, gender, plural = _noun(head)
    adjectives, modifiers = [], []
    for word in before:
        if word in ADJECTIVES:
            masculine, feminine = ADJECTIVES[word]
            adjective = feminine if gender == "f" else masculine
            adjectives.append(_plural(adjective) if plural and " " not in adjective else adjective)
        else:
            modifiers.append(_noun(word)[0])
    article = {("m", False): "el", ("f", False): "la", ("m", True): "los", ("f", True): "las"}[(gender, plural)]
    return [article, noun, *adjectives, *(f"de {m}" for m in modifiers)]


def _noun(word: str) -> tuple[str, str, bool]:
    if word in NOUNS:
        return (*NOUNS[word], False)
    for singular in (word[:-3] + "y" if word.endswith("ies") else None, word[:-2] if word.endswith("es") else None,
                     word[:-1] if word.endswith("s") else None):
        if singular and singular in NOUNS:
            spanish, gender = NOUNS[singular]
            return _plural(spanish), gender, True
    gender = "f" if re.search(r"(a|ion|ión|dad)$", word) else "m"
    return word, gender, word.endswith("s") and len(word) > 3


def _plural(word: str) -> str:
    if word.endswith("ión"):
        return word[:-3] + "iones"
    if word[-1:] in "aeiouáéó":
        return word + "s"
    return word + "es"
