"""Descriptions (C2): what the tool does and when not to use it, in one or two
sentences; no tone, brand or instructions to the model; no volatile data.

Everything here except a missing description, one past 10,000 characters and
an attempt to override the agent's instructions is a heuristic over Spanish
and English text, so it warns: a false positive must never hide a tool from
agents. The text is a tenant's, so the regexes stay linear on hostile input
(no run that two quantifiers can split, no scan restarted inside a run).
"""

import re

from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from .findings import Finding, blocking, warning
from .leaks import TOKEN, find_leaks

_I = re.IGNORECASE

# A description rides along with every model call that offers the tool. Two sentences and a
# "when not to use it" fit in a few hundred characters.
LONG_LENGTH = 1_000
MAX_LENGTH = 10_000

# --- Sentences -------------------------------------------------------------

# A sentence ends at . ! ? … followed by a capital (or an opening ¿ ¡ quote),
# so "8 a.m. a 5 p.m." and "$ 89.900" do not split. Line breaks split too.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?…])\s+(?=[¿¡\"'“(]?[A-ZÁÉÍÓÚÑÜ])|\n+")
_ABBREVIATION_END = re.compile(r"(?:\b(?:e\.g|i\.e|ej|sr|sra|dr|dra|n[úu]m|aprox|approx|vs|ud|uds)\.)$", _I)
_ABBREVIATION_TAIL = len("approx.") + 1

# Guidance on when (not) to use the tool. The contract's own example spends one
# sentence on what the tool does and two on when to use it, so guidance
# sentences are not counted against the "one or two sentences" limit.
_WHEN_NOT = re.compile(
    # "no" + spaces + an optional pronoun with its own spaces: two runs of spaces side by side
    # (`\s+(?:la)?\s*`) split a long run every possible way (quadratic).
    r"\bno\s+(?:(?:la|lo|las|los|se)\s+)?(?:uses?|usa|usar(?:la|lo)?|utilices|utilice|utilizar|sirve|es\s+para|aplica|debe\s+usarse|"
    r"llames|llame|llamar|invoques)\b"
    r"|\bnunca\s+(?:la|lo)?\s*(?:uses?|utilices)\b|\ben\s+(?:lugar\s+de|su\s+lugar)\b|\bevita\s+usarl[ao]\b"
    r"|\b(?:do\s+not|don't|never|should\s+not|shouldn't|must\s+not)\s+(?:be\s+)?(?:use|used|call|called|invoke)\b"
    r"|\bnot\s+(?:for|intended\s+for|meant\s+for|suitable\s+for)\b|\binstead\b|\bavoid\s+(?:using|calling)\b",
    _I,
)
_WHEN_TO = re.compile(
    r"^\W*(?:[úu]sal[ao]|util[íi]zal[ao]|ll[áa]mal[ao]|inv[óo]cal[ao])\b|\bsolo\s+(?:cuando|si)\b|\bs[óo]lo\s+cuando\b"
    r"|^\W*(?:use|call)\s+(?:it|this(?:\s+tool)?)\b|\bonly\s+(?:when|if)\b",
    _I,
)

# --- Tone, brand and instructions to the model ------------------------------

# Attempts to override the agent's own instructions are never legitimate in a
# description and are a prompt-injection vector: these block.
_OVERRIDE = re.compile(
    r"\b(?:ignor(?:e|a|ar)|disregard|forget|olvida)\s+(?:\w+\s+){0,3}instruc(?:tions|ciones)\b|\bsystem\s+prompt\b",
    _I,
)
_TONE = re.compile(
    # Spanish
    r"\bamablemente\b|\bcordialmente\b|\bcon\s+amabilidad\b"
    r"|\bresponde(?:r)?\s+(?:siempre|de\s+(?:forma|manera|modo)|en\s+tono|con\s+(?:amabilidad|cortes[íi]a|emojis?))"
    r"|\beres\s+(?:un|una|el|la)\b|\bact[úu]a\s+como\b|\bcomp[óo]rtate\b|\bhabla\s+(?:como|de\s+usted|de\s+t[úu])\b"
    r"|\btutea\b|\bs[ée]\s+(?:amable|cordial|breve|conciso|concisa|educad[oa]|cort[ée]s)\b"
    r"|\bsiempre\s+(?:responde|di|saluda|menciona|recomienda|ofrece)\b|\bnunca\s+(?:digas|menciones|reveles|hables)\b"
    r"|\bdile\s+al\s+(?:cliente|usuario)\b|\bdebes\s+(?!usar|utilizar|llamar|invocar)\w+"
    r"|\btono\s+(?:amable|cordial|amigable|formal|c[áa]lido|cercano|profesional)\b|\bemojis?\b"
    # English
    r"|\b(?:answer|respond|reply)\s+(?:politely|kindly|always|in\s+a\s+\w+\s+(?:tone|way|manner))"
    r"|\balways\s+(?:answer|respond|reply|say|greet|mention|recommend|be)\b"
    r"|\byou\s+are\s+(?:an?|the)\s+(?:\w+\s+){0,2}(?:assistant|agent|bot|ai)\b|\bact\s+as\b|\bbehave\s+like\b"
    r"|\byou\s+must\b(?!\s+(?:not\s+|only\s+|never\s+)?(?:use|call|invoke))|\byou\s+should\s+always\b"
    r"|\bnever\s+(?:say|mention|reveal|tell|disclose)\b|\bbe\s+(?:polite|friendly|concise|kind|courteous)\b"
    r"|\btell\s+the\s+(?:customer|user)\b|\bin\s+a\s+(?:friendly|polite|warm|formal|professional)\s+tone\b",
    _I,
)
_BRAND = re.compile(
    r"[®™]|\bl[íi]der(?:es)?\s+en\b|\bn[úu]mero\s+uno\b|#1\b|\bworld[-\s]class\b|\bindustry[-\s]leading\b"
    r"|\baward[-\s]winning\b|\bleading\s+(?:provider|company|brand)\b|\bnuestra\s+marca\b|\bour\s+brand\b"
    r"|\bsomos\s+(?:la|el|una|un|los|las)\b|\bwe\s+are\s+(?:the|a|an)\b",
    _I,
)

# --- Volatile data -----------------------------------------------------------

# A price is an amount next to a currency; "consultar el precio" is not one.
_PRICE = re.compile(
    r"(?:\b(?:USD|COP|EUR|MXN|CLP|PEN|ARS|BRL|GBP)|US\$|[$€£])\s?\d"
    # An amount starts where its run of digits, dots and commas starts: with only `\b`, every digit
    # of "1.1.1.…" started a scan to the end of the run (quadratic).
    r"|(?<![\d.,])\b\d[\d.,]*\s?(?:(?:USD|COP|EUR|MXN|CLP|PEN|ARS|BRL|GBP)\b|€|(?i:pesos|d[óo]lares|euros|dollars)\b)"
    r"|(?i:\b\d{1,3}\s?%\s?(?:de\s+)?(?:descuento|dto|off|discount)\b)"
)
# Opening hours are times or day ranges; "horario" as an entity is not one.
_DAY_ES = r"(?:lunes|martes|mi[ée]rcoles|jueves|viernes|s[áa]bados?|domingos?)"
_DAY_EN = r"(?:mon(?:day)?|tue(?:s|sday)?|wed(?:nesday)?|thu(?:rs|rsday)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?)"
_DAY_RANGES = (
    rf"\b{_DAY_ES}\s+(?:a|al|hasta)\s+(?:el\s+)?{_DAY_ES}\b|\b{_DAY_EN}\s*(?:-|–|to|through|thru)\s*{_DAY_EN}\b"
)
_HOURS = re.compile(
    r"\b\d{1,2}(?::\d{2})?\s?(?:a\.?\s?m\b\.?|p\.?\s?m\b\.?)"
    r"|\b\d{1,2}:\d{2}\s?(?:h|hrs|horas)?\s?(?:-|–|a|to|hasta)\s?\d{1,2}:\d{2}"
    r"|\b\d{1,2}\s?(?:h|hrs)\s?(?:-|–|a|to)\s?\d{1,2}\s?(?:h|hrs)\b"
    rf"|{_DAY_RANGES}"
    r"|\b24/7\b",
    _I,
)
# What _HOURS can find in a text without digits (P2: most descriptions have none, and every
# other volatile pattern needs one).
_HOURS_WITHOUT_DIGITS = re.compile(_DAY_RANGES, _I)
_DIGIT = re.compile(r"\d")
# Stock is a count or an availability claim; "stock" as a returned field is not.
_STOCK_COUNT = re.compile(
    r"\bquedan\s+(?:s[óo]lo\s+)?\d+|\b\d+\s+(?:unidades|existencias)\b|\bonly\s+\d+\s+left\b"
    r"|\b\d+\s+(?:units?|items?|pieces?)\s+(?:left|available|in\s+stock)\b"
    r"|\b(?:stock|inventario|inventory|existencias)\s*(?:(?::|de|of)\s*)?\d+",
    _I,
)
_STOCK_CLAIM = re.compile(
    r"\b(?:agotad[oa]s?|sold\s+out|out\s+of\s+stock|in\s+stock|en\s+stock|en\s+existencia|hay\s+existencias"
    r"|[úu]ltimas\s+unidades|last\s+units)\b",
    _I,
)
# "Returns whether it is in stock" or "lists only products in stock" describe
# what the tool does, not the stock itself.
_DESCRIPTIVE_LEAD = re.compile(r"\b(?:whether|if|si|only|solo|s[óo]lo|[úu]nicamente|filtra|filters?)\b", _I)


def sentences(text: str) -> list[str]:
    """Split a description into sentences, keeping abbreviations together."""
    parts: list[list[str]] = []
    for piece in _SENTENCE_BREAK.split(text):
        piece = piece.strip()
        if not piece:
            continue
        # Only the end of the sentence so far can hold an abbreviation: searching all of it, and
        # joining strings, made "Dr. A Dr. A …" quadratic. The slice keeps one character before
        # the longest abbreviation, so `\b` still sees what precedes it.
        if parts and _ABBREVIATION_END.search(parts[-1][-1][-_ABBREVIATION_TAIL:]):
            parts[-1].append(piece)
        else:
            parts.append([piece])
    return [" ".join(part) for part in parts]


def volatile_data(text: str) -> list[str]:
    """The kinds of volatile data found ("price", "hours", "stock"), in that order."""
    kinds = []
    digits = _DIGIT.search(text) is not None
    if digits and _PRICE.search(text):
        kinds.append("price")
    if (_HOURS if digits else _HOURS_WITHOUT_DIGITS).search(text):
        kinds.append("hours")
    if (digits and _STOCK_COUNT.search(text)) or _stock_claim(text):
        kinds.append("stock")
    return kinds


def _stock_claim(text: str) -> bool:
    for match in _STOCK_CLAIM.finditer(text):
        if not _DESCRIPTIVE_LEAD.search(text, max(match.start() - 30, 0), match.start()):
            return True
    return False


def check_description(description) -> list[Finding]:
    if not isinstance(description, str) or not description.strip():
        # Without a description the model cannot choose the tool correctly.
        return [
            blocking(
                "C2",
                _("The tool has no description."),
                _("In one or two sentences, say what the tool does and when not to use it."),
            )
        ]
    findings: list[Finding] = _check_length(description)
    # Past the blocking length the rest changes nothing; the heuristics read a bounded text.
    description = description[:MAX_LENGTH]
    tokens = sorted({leak.label for leak in find_leaks(description) if leak.kind == TOKEN})
    if tokens:
        # A credential in the description reaches every model that is offered the tool; the
        # gateway cannot take it back, so it blocks in every contract mode (issue 8).
        findings.append(
            blocking(
                "C2",
                format_lazy(_("The description holds what looks like a credential ({kinds})."), kinds=", ".join(tokens)),
                _("Remove it from the description and rotate it: it has been shown to anyone who listed the tools."),
            )
        )
    if _OVERRIDE.search(description):
        findings.append(
            blocking(
                "C2",
                _("The description tries to override the agent's instructions."),
                _("Remove any text that addresses the model's instructions; describe only what the tool does."),
            )
        )
    if _TONE.search(description) or _BRAND.search(description):
        findings.append(
            warning(
                "C2",
                _("The description has tone, brand or instructions for the model."),
                _("The agent sets tone and brand; duplicating them here conflicts with it. Describe only what the tool does."),
            )
        )
    kinds = volatile_data(description)
    if kinds:
        labels = {"price": _("prices"), "hours": _("opening hours"), "stock": _("stock")}
        findings.append(
            warning(
                "C2",
                format_lazy(
                    _("The description has volatile data ({kinds})."),
                    kinds=format_lazy(", ".join("{}" for _k in kinds), *(labels[k] for k in kinds)),
                ),
                _("Descriptions are cached; return prices, hours and stock in the tool's response instead."),
            )
        )
    findings.extend(_check_shape(description))
    return findings


def _check_length(description: str) -> list[Finding]:
    size = len(description)
    if size > MAX_LENGTH:
        # Sent to the model with every turn that offers the tool: it crowds out the conversation.
        return [
            blocking(
                "C2",
                format_lazy(_("The description has {size} characters; at most {limit} are accepted."), size=size, limit=MAX_LENGTH),
                _LENGTH_HINT,
            )
        ]
    if size > LONG_LENGTH:
        return [
            warning(
                "C2",
                format_lazy(_("The description has {size} characters; more than {limit} is long for the model."), size=size, limit=LONG_LENGTH),
                _LENGTH_HINT,
            )
        ]
    return []


_LENGTH_HINT = _("Say in one or two sentences what the tool does and when not to use it; details belong in the schema's descriptions.")


def _check_shape(description: str) -> list[Finding]:
    parts = sentences(description)
    when_not = {s for s in parts if _WHEN_NOT.search(s)}
    guidance = [s for s in parts if s in when_not or _WHEN_TO.search(s)]
    what = len(parts) - len(guidance)
    findings = []
    if what == 0 or what > 2 or len(guidance) > 2:
        findings.append(
            warning(
                "C2",
                format_lazy(_("The description has {count} sentences."), count=len(parts)),
                _("Use one or two sentences for what the tool does, and a short one for when not to use it."),
            )
        )
    if not when_not:
        findings.append(
            warning(
                "C2",
                _("The description does not say when not to use the tool."),
                _("Add a sentence such as “No la uses para consultar el estado de un caso existente.”"),
            )
        )
    return findings
